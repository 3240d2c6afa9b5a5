// What the wire protocols carry of post-processing: the sluice start message's tenant, and the
// FunASR `itn` flag choosing the display or the spoken form of finals.

#include <doctest/doctest.h>

#include "net/funasr_replies.hpp"
#include "net/ws_messages.hpp"

using namespace sluice;
using namespace sluice::net;

TEST_CASE("sluice start: a tenant may be named, a malformed one is refused by name") {
  auto r = parse_sluice_start(R"({"type":"start","tenant":"billing-eu.1"})");
  REQUIRE(r.has_value());
  CHECK(r->tenant == "billing-eu.1");
  CHECK(parse_sluice_start(R"({"type":"start"})")->tenant.empty());
  auto bad = parse_sluice_start(R"({"type":"start","tenant":"a b"})");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message.find("tenant") != std::string::npos);
  bad = parse_sluice_start(R"({"type":"start","tenant":")" + std::string(max_tenant_bytes + 1, 't') + R"("})");
  REQUIRE_FALSE(bad.has_value());
}

TEST_CASE("FunASR: finals carry the display form unless the start message says itn: false") {
  actors::transcript_event ev;
  ev.is_final = true;
  ev.text = "twenty dollars";
  ev.words = {{"twenty", 0, 300, 1}, {"dollars", 300, 700, 1}};
  ev.display_text = "$20.";
  ev.display_words = {{"$20.", 0, 700, 1}};
  auto on = parse_funasr_start(R"({"mode":"offline"})");
  auto off = parse_funasr_start(R"({"mode":"offline","itn":false})");
  REQUIRE(on.has_value());
  REQUIRE(off.has_value());
  CHECK(on->itn);
  CHECK_FALSE(off->itn);
  funasr_replies with_itn(on->mode, on->wav_name, on->itn), without(off->mode, off->wav_name, off->itn);
  const auto a = with_itn.on_event(ev), b = without.on_event(ev);
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  CHECK((*a)["text"] == "$20.");
  CHECK((*a)["timestamp"] == "[[0,700]]");
  CHECK((*b)["text"] == "twenty dollars");
  CHECK((*b)["timestamp"] == "[[0,300],[300,700]]");
  CHECK_FALSE(parse_funasr_start(R"({"itn":"yes"})").has_value());
}
