// libFuzzer target: net/sip/sdp_offer.hpp, what a SIP peer's INVITE body goes through (sofia-sip's
// SDP parser, then sluice's choice of streams and codec, then the answer's text).
// Beyond "no crash": a refusal has a message; an accepted offer has at least one accepted stream,
// each with a codec we decode and a remote port; the answer keeps one m= line per offered line
// and never carries a line break inside a line (a label from the offer cannot inject lines).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "net/sip/sdp_offer.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

using namespace sluice;
using namespace sluice::net::sip;

namespace {
constexpr std::size_t max_streams = 8;
std::size_t count(const std::string& s, std::string_view what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto o = parse_offer(text, max_streams);
  if (!o) {
    fuzz::require_message(o.error());
    return 0;
  }
  fuzz::require(o->accepted() > 0, "an accepted offer without an accepted stream");
  fuzz::require(o->streams.size() <= max_streams, "more streams than the limit");
  std::vector<uint16_t> ports;
  for (const auto& s : o->streams) {
    if (!s.accepted) continue;
    fuzz::require(s.remote_port > 0, "an accepted stream without a port");
    fuzz::require(s.codec.sample_rate == 8000 || s.codec.sample_rate == 16000, "a codec rate we do not decode");
    ports.push_back(static_cast<uint16_t>(40000 + 2 * ports.size()));
  }
  fuzz::require(choose_local_keys(*o).has_value(), "no keys of ours for an accepted offer");
  std::size_t secure = 0;
  for (const auto& s : o->streams)
    if (s.accepted && s.secure) {
      ++secure;
      fuzz::require(s.remote_crypto.key.size() == suite_key_bytes(s.remote_crypto.suite), "a peer key of the wrong length");
      fuzz::require(s.local_crypto.key.size() == suite_key_bytes(s.local_crypto.suite), "a key of ours of the wrong length");
    }
  const auto answer = render_answer(*o, "127.0.0.1", ports, 1, 1);
  fuzz::require(count(answer, "\r\na=crypto:") == secure, "the answer's a=crypto lines differ from the SRTP streams");
  fuzz::require(count(answer, "\r\nm=") == o->streams.size(), "the answer's m= lines differ from the offer's");
  fuzz::require(count(answer, "\r\n") == count(answer, "\n"), "a bare line feed inside the answer");
  fuzz::require(count(answer, "\r") == count(answer, "\r\n"), "a bare carriage return inside the answer");
  return 0;
}
