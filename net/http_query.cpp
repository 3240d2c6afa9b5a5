#include "net/http_query.hpp"

#include <charconv>

#include "net/json_fields.hpp"

namespace sluice::net {

result<std::map<std::string, std::string>> query_params(std::string_view target) {
  std::map<std::string, std::string> out;
  const auto q = target.find('?');
  if (q == std::string_view::npos) return out;
  std::size_t i = q + 1;
  while (i < target.size()) {
    auto amp = target.find('&', i);
    if (amp == std::string_view::npos) amp = target.size();
    const auto kv = target.substr(i, amp - i);
    // A parameter that is not UTF-8 would make every reply quoting it invalid.
    if (valid_utf8(kv) != kv) return fail(errc::invalid_argument, "the query string is not valid UTF-8");
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos) out[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    i = amp + 1;
  }
  return out;
}

result<int64_t> query_int(std::string_view key, std::string_view value, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || v < lo || v > hi)
    return fail(errc::invalid_argument, std::string(key) + " must be an integer in [" + std::to_string(lo) + ", " +
                                            std::to_string(hi) + "]");
  return v;
}

}  // namespace sluice::net
