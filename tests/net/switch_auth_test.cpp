// The switch protocols behind the server's gate: jambonz STT's Bearer token and AudioHook's
// X-API-KEY are API keys of [auth]; a wrong one is refused before the upgrade, a right one
// admits the switch and its call belongs to the key's tenant.
#include "tests/net/auth_test_util.hpp"
#include "tests/net/switch_test_util.hpp"
#include "tests/common/audio_tools.hpp"

#include "net/auth/key_store.hpp"

using namespace sluice;
using namespace sluice::test;

TEST_SUITE("switch auth") {
  TEST_CASE("switch auth: a wrong Bearer or X-API-KEY gets 401, a valid key's tenant owns the call") {
    keyring ring;
    const std::string key = ring.add("acme", "stream");
    config::sluice_config cfg;
    cfg.auth.keys_file = ring.path;
    served s(cfg);

    CHECK(stepped_stream(s.port).open("/jambonz/stt", bearer("not-a-key")) == 401);
    CHECK(stepped_stream(s.port).open("/audiohook", {{"X-API-KEY", "not-a-key"}}) == 401);
    CHECK(stepped_stream(s.port).open("/twilio", {}) == 401);

    const auto frames = pcm16_frames(call_samples(0), 160);
    stepped_stream stt(s.port);
    REQUIRE(stt.open("/jambonz/stt", bearer(key)) == 101);
    stt.send_text(R"({"type":"start","language":"en-US","format":"raw","encoding":"LINEAR16","sampleRateHz":8000})");
    for (std::size_t i = 0; i < 50; ++i) stt.send_binary(frames[i]);
    stt.send_text(R"({"type":"stop"})");
    CHECK(stt.read_to_close() == 1000);
    CHECK(wait_ended_call(*s.server, "jambonz_stt").start.tenant == "acme");

    stepped_stream hook(s.port);
    REQUIRE(hook.open("/audiohook", {{"X-API-KEY", key}, {"Audiohook-Session-Id", "s-1"}}) == 101);
    hook.send_text(R"({"version":"2","id":"s-1","type":"open","seq":1,"serverseq":0,"position":"PT0S","parameters":{"conversationId":"c-1","media":[{"type":"audio","format":"PCMU","channels":["external","internal"],"rate":8000}]}})");
    hook.send_binary(std::vector<uint8_t>(320, 0xff));
    hook.send_text(R"({"version":"2","id":"s-1","type":"close","seq":2,"serverseq":1,"position":"PT0.02S","parameters":{"reason":"end"}})");
    CHECK(hook.read_to_close() == 1000);
    REQUIRE(hook.messages().size() == 2);
    CHECK(hook.messages().front()["type"] == "opened");
    CHECK(hook.messages().back()["type"] == "closed");
    CHECK(wait_ended_call(*s.server, "audiohook").start.tenant == "acme");
  }
}
