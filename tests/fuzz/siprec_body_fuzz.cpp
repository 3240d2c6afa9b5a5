// libFuzzer target: net/sip/siprec_metadata.hpp, what a SIPREC recorder's INVITE body goes through
// (sofia-sip's multipart parser, then libxml2 on the metadata part). The first input byte picks
// the body's boundary length, the rest is the body; the metadata parser also gets the whole input.
// Beyond "no crash": refusals have a message; a split body always has its SDP; a channel label
// is one of the metadata's names, AORs or participant ids.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/sip/siprec_metadata.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

using namespace sluice;
using namespace sluice::net::sip;

namespace {
void check_metadata(std::string_view xml) {
  auto m = parse_rs_metadata(xml);
  if (!m) {
    fuzz::require_message(m.error());
    return;
  }
  for (const auto& [stream, label] : m->stream_label) {
    const auto name = m->channel_label(label);
    if (name.empty()) continue;
    bool known = false;
    for (const auto& p : m->participants) known = known || name == p.name || name == p.aor || name == p.id;
    for (const auto& [s, pid] : m->sender) known = known || name == pid;
    fuzz::require(known, "a channel label that names no participant");
  }
  (void)m->to_json().dump();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string boundary = std::string("b") + std::string(data[0] % 8, 'x');
  auto b = split_invite_body("multipart/mixed;boundary=" + boundary, in);
  if (!b) {
    fuzz::require_message(b.error());
  } else {
    fuzz::require(!b->sdp.empty(), "a split body without its SDP");
    if (!b->rs_metadata.empty()) check_metadata(b->rs_metadata);
  }
  check_metadata(in);
  return 0;
}
