#include "net/switches/switch_json.hpp"

#include <charconv>

namespace sluice::net::switches {

tl::expected<nlohmann::json, std::string> parse_object(std::string_view text) {
  auto j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return tl::unexpected(std::string("the text frame is not JSON"));
  if (!j.is_object()) return tl::unexpected(std::string("the text frame is not a JSON object"));
  return j;
}

std::optional<std::string> string_field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<long long> integer_field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<long long>();
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (d != static_cast<double>(static_cast<long long>(d))) return std::nullopt;
    return static_cast<long long>(d);
  }
  if (!it->is_string()) return std::nullopt;
  const auto& s = it->get_ref<const std::string&>();
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

float mean_confidence(const actors::transcript_event& ev) {
  if (ev.words.empty()) return 0;
  float sum = 0;
  for (const auto& w : ev.words) sum += w.confidence;
  return sum / static_cast<float>(ev.words.size());
}

nlohmann::json words_json(const actors::transcript_event& ev) {
  auto words = nlohmann::json::array();
  for (const auto& w : ev.words)
    words.push_back({{"word", w.word}, {"start_ms", w.start_ms}, {"end_ms", w.end_ms}, {"confidence", w.confidence}});
  return words;
}

}  // namespace sluice::net::switches
