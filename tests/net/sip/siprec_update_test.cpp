// SIPREC metadata updates during a recording (RFC 7866 7.1.1), by re-INVITE and by UPDATE (RFC
// 3311), from SIPp: each is answered with a newer SDP version (SIPp checks it), the call's
// metadata ends with the last update's participants, each update is an event naming who now
// sends each channel, and the recorded audio goes on across both (its text stays within the
// phone WER target the other SIP tests use).
#include "tests/common/phone_recording.hpp"
#include "tests/net/sip/sip_test_util.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {
// The recording lasts 6.27 s; the updates come 1.5 s and 2.5 s in; the recorder hangs up 1.5 s
// after the audio ends.
constexpr int after_update_ms = 5300;
}  // namespace

TEST_SUITE("sip siprec updates") {
  TEST_CASE("SIPREC metadata changed by re-INVITE then UPDATE: participants and per-channel labels follow, audio goes on") {
    temp_dir tmp;
    sip_served s;
    const auto pcap = tmp.file("call.pcap");
    REQUIRE(run("/usr/bin/python3 " SLUICE_SOURCE_DIR "/tests/net/sip/make_rtp_pcap.py " + phone_recording + " " + pcap) == 0);
    auto r = run_sipp(s, tmp, "uac_siprec_update.xml",
                      {{"@PCAP@", pcap}, {"@PAUSE_MS@", std::to_string(after_update_ms)}}, "-m 1");
    INFO(r.output);
    REQUIRE(r.status == 0);  // both 200s carried SDP versions 2 and 3
    REQUIRE(s.wait_for([&] {
      auto all = s.calls->list();
      return all.size() == 1 && !all[0].live;
    }));
    const auto c = s.calls->list()[0];
    CHECK(c.start.source == "siprec");
    CHECK(c.end_reason == "hangup");
    // The channels keep the names they were opened with.
    REQUIRE(c.channels.size() == 2);
    CHECK(c.channels[0].label == "Alice");
    CHECK(c.channels[1].label == "Bob");
    // The metadata is the last update's.
    std::vector<std::string> names;
    for (const auto& p : c.start.metadata["siprec"]["participants"]) names.push_back(p["name"].get<std::string>());
    CHECK(names == std::vector<std::string>{"Carol", "Dave"});
    // One event per update, in order, with who sends each channel.
    std::vector<nlohmann::json> updates;
    for (const auto& e : c.events)
      if (e.type == "siprec_metadata") updates.push_back(e.data["labels"]);
    REQUIRE(updates.size() == 2);
    CHECK(updates[0] == nlohmann::json::array({"Carol", "Bob"}));
    CHECK(updates[1] == nlohmann::json::array({"Carol", "Dave"}));
    // The audio went on across both: the whole sentence is there.
    const auto text = finals_text(c, 0);
    const double wer = word_error_rate(phone_recording_text(), text);
    MESSAGE("across a re-INVITE and an UPDATE: \"" << text << "\", word error rate " << wer);
    CHECK(wer <= phone_wer_target);
  }
}
