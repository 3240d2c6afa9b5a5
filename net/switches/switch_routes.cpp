#include "net/switches/switch_routes.hpp"

#include "net/http_query.hpp"
#include "net/switches/audiohook_protocol.hpp"
#include "net/switches/fork_protocol.hpp"
#include "net/switches/jambonz_stt_protocol.hpp"
#include "net/switches/twilio_protocol.hpp"

namespace sluice::net::switches {

namespace {

constexpr std::string_view audio_fork_path = "/audio_fork", jambonz_path = "/jambonz", jambonz_stt_path = "/jambonz/stt",
                           twilio_path = "/twilio", audiohook_path = "/audiohook";
constexpr int64_t min_rate = 8000, max_rate = 64000;

std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

// mod_audio_fork's mix type and rate are FreeSWITCH's arguments, not sent: the URL may say them.
tl::expected<fork_defaults, std::string> fork_query(std::string_view target) {
  fork_defaults d;
  const auto q = query_params(target);
  if (!q) return tl::unexpected(q.error().message);
  if (const auto it = q->find("sampleRate"); it != q->end()) {
    const auto rate = query_int("sampleRate", it->second, min_rate, max_rate);
    if (!rate) return tl::unexpected(rate.error().message);
    d.sample_rate = static_cast<int>(*rate);
  }
  if (const auto it = q->find("mixType"); it != q->end()) d.mix_type = it->second;
  return d;
}

}  // namespace

bool is_switch_path(std::string_view path) {
  return path == audio_fork_path || path == jambonz_path || path == jambonz_stt_path || path == twilio_path ||
         path == audiohook_path;
}

tl::expected<std::unique_ptr<switch_protocol>, std::string> make_switch_protocol(std::string_view target,
                                                                                 std::string session_header) {
  const auto path = path_of(target);
  if (path == audio_fork_path || path == jambonz_path) {
    auto d = fork_query(target);
    if (!d) return tl::unexpected(d.error());
    return std::make_unique<fork_protocol>(path == jambonz_path ? fork_flavour::jambonz : fork_flavour::audio_fork,
                                           std::move(*d));
  }
  if (path == jambonz_stt_path) return std::make_unique<jambonz_stt_protocol>();
  if (path == twilio_path) return std::make_unique<twilio_protocol>();
  if (path == audiohook_path) return std::make_unique<audiohook_protocol>(std::move(session_header));
  return tl::unexpected("no switch protocol at " + std::string(path));
}

}  // namespace sluice::net::switches
