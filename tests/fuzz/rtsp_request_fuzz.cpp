// libFuzzer target: net/rtsp/rtsp_message.hpp, rtsp_transport.hpp and rtsp_sdp.hpp, what a
// pusher's bytes go through on an RTSP connection: the framing of requests and interleaved RTP,
// the Transport header of a SETUP, the SDP of an ANNOUNCE, a Basic Authorization (what a pusher
// sends) and a WWW-Authenticate challenge (what a pulled server sends, read from the same headers).
// Beyond "no crash": a frame never claims more bytes than it was given, errors carry a status
// of 400, 413 or 505 and a reason, nothing over the limits is accepted, a rendered reply and
// Transport value never carry a bare line break, and an accepted SDP takes an audio stream.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "net/rtsp/rtsp_auth.hpp"
#include "net/rtsp/rtsp_message.hpp"
#include "net/rtsp/rtsp_sdp.hpp"
#include "net/rtsp/rtsp_transport.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

using namespace sluice;
using namespace sluice::net::rtsp;

namespace {
constexpr std::size_t max_media = 4;
bool no_bare_breaks(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r' && (i + 1 >= s.size() || s[i + 1] != '\n')) return false;
    if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r')) return false;
  }
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  message_limits limits;
  limits.max_header_bytes = 1024;
  limits.max_body_bytes = 1024;
  std::span<const uint8_t> buf(data, size);
  // Frame after frame, as a connection would read them.
  while (!buf.empty()) {
    auto f = parse_request(buf, limits);
    if (f.kind == frame_kind::need_more) break;
    if (f.kind == frame_kind::error) {
      fuzz::require(f.error_status == 400 || f.error_status == 413 || f.error_status == 505, "an unexpected error status");
      fuzz::require(!f.error_reason.empty(), "an error without a reason");
      break;
    }
    fuzz::require(f.consumed > 0 && f.consumed <= buf.size(), "a frame longer than its input");
    if (f.kind == frame_kind::request) {
      const auto& r = f.request;
      fuzz::require(r.body.size() <= limits.max_body_bytes, "a body over the limit");
      fuzz::require(r.cseq >= -1, "a negative CSeq");
      const auto reply = render_response(200, r.cseq, {{"Public", "OPTIONS"}}, r.body.empty() ? "" : "x");
      fuzz::require(no_bare_breaks(reply.substr(0, reply.find("\r\n\r\n"))), "a bare line break in a reply's head");
      if (auto t = find_header(r.headers, "Transport")) {
        if (auto spec = choose_transport(*t))
          fuzz::require(no_bare_breaks(render_transport(*spec)) && render_transport(*spec).find('\n') == std::string::npos,
                        "a line break in a Transport value");
      }
      if (auto a = find_header(r.headers, "Authorization")) (void)basic_credentials(*a);
      const auto c = parse_challenge(r.headers);
      if (c.scheme == auth_scheme::digest) {
        fuzz::require(!c.nonce.empty(), "a Digest challenge without a nonce was taken");
        const auto answer = authorization(c, "u", "p", r.method, r.uri, 1, "c");
        fuzz::require(answer.rfind("Digest ", 0) == 0 && answer.find("response=\"") != std::string::npos,
                      "a Digest answer without its response");
      }
      if (!r.body.empty()) {
        auto d = parse_description(r.body, r.uri, max_media);
        if (!d) fuzz::require_message(d.error());
        else {
          fuzz::require(d->taken() > 0 && d->media.size() <= max_media, "an accepted SDP without audio, or too many media");
          for (const auto& m : d->media)
            if (m.taken) fuzz::require(m.sample_rate >= 8000 && m.sample_rate <= 48000 && m.channels >= 1 && m.channels <= 2,
                                       "a stream we cannot decode was taken");
        }
      }
    } else {
      fuzz::require(f.payload.size() + 4 == f.consumed, "an interleaved payload of the wrong length");
    }
    buf = buf.subspan(f.consumed);
  }
  return 0;
}
