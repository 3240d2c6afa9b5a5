// libFuzzer target: net/ws_messages.hpp and net/json_fields.hpp, what a WebSocket client's text
// messages go through (the sluice and FunASR start and end messages).
// Beyond "no crash, no exception": every refusal has a message, and that message (which the
// server echoes to the client) is valid UTF-8 once through to_wire and parses back as JSON; an
// accepted start asks for one channel at a rate in the range the parser promises.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "dsp/pcm.hpp"
#include "net/json_fields.hpp"
#include "net/ws_messages.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

using namespace sluice;

namespace {

// What the session sends for a refusal: it must be valid JSON whatever bytes the reason quotes.
void require_echo_safe(const error& e) {
  fuzz::require_message(e);
  const auto wire = net::to_wire(nlohmann::json{{"type", "error"}, {"reason", e.message}});
  fuzz::require(nlohmann::json::accept(wire), "an error reason did not survive to_wire as JSON");
  const auto reason = net::close_reason_text(e.message);
  fuzz::require(reason.size() <= 123, "a close reason is longer than 123 bytes");
  fuzz::require(net::valid_utf8(reason) == reason, "a close reason is not valid UTF-8");
}

void require_valid_request(const actors::channel_request& r) {
  fuzz::require(r.sample_rate >= dsp::min_sample_rate && r.sample_rate <= dsp::max_sample_rate,
                "an accepted start has a sample rate outside the parser's range");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto s = net::parse_sluice_start(text)) require_valid_request(*s);
  else require_echo_safe(s.error());
  if (auto f = net::parse_funasr_start(text)) {
    require_valid_request(f->request);
    fuzz::require(f->mode == "online" || f->mode == "offline" || f->mode == "2pass", "an accepted FunASR mode is unknown");
    fuzz::require(net::valid_utf8(f->wav_name) == f->wav_name, "wav_name is not valid UTF-8");
  } else {
    require_echo_safe(f.error());
  }
  if (auto e = net::parse_sluice_end(text); !e) require_echo_safe(e.error());
  if (auto e = net::parse_funasr_end(text); !e) require_echo_safe(e.error());
  // Any bytes at all, echoed: valid UTF-8 out.
  const auto fixed = net::valid_utf8(text);
  fuzz::require(net::valid_utf8(fixed) == fixed, "valid_utf8 is not idempotent");
  return 0;
}
