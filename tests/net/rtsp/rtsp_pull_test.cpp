// Pulls from a real RTSP server: GStreamer's gst-rtsp-server (through python3-gi, the fixture
// tests/net/rtsp/rtsp_wav_server.py) serving the committed phone recording as PCMU. The pulled
// call must give word for word what the engine makes of the file read directly (within the
// phone WER target of its true transcript), end when the server goes away, come
// back when the server does (reconnect with back-off), and end when the pull is stopped.
#include "tests/net/rtsp/rtsp_test_util.hpp"

#include <nlohmann/json.hpp>

using namespace sluice;
using namespace sluice::test;

namespace {
const std::string fixture = SLUICE_SOURCE_DIR "/tests/net/rtsp/rtsp_wav_server.py";
constexpr auto call_limit = std::chrono::seconds(45);

bool have_rtsp_server() {
  if (have_tool("/usr/bin/python3 -c \"import gi; gi.require_version('GstRtspServer', '1.0'); "
                "from gi.repository import GstRtspServer\"") &&
      have_tool("command -v soxi"))
    return true;
  MESSAGE("SKIPPED: gst-rtsp-server for Python is not installed (gir1.2-gst-rtsp-server-1.0, python3-gst-1.0; "
          "tools/setup.sh installs them)");
  return false;
}

// The recording as 16-bit PCM (what the fixture's launch line reads); lossless from mu-law.
std::string pcm_wav(const temp_dir& tmp) {
  const auto wav = tmp.file("call_s16.wav");
  REQUIRE(sox("\"" + phone_recording + "\" -e signed-integer -b 16 \"" + wav + "\""));
  return wav;
}

// Waits for the fixture to print "ready".
bool fixture_ready(const std::string& log) {
  return poll_until([&] { return read_text(log).find("ready") != std::string::npos; }, std::chrono::seconds(20));
}
}  // namespace

TEST_SUITE("rtsp pulls") {
  TEST_CASE("a pull over TCP interleaved: the file's exact text, the call ends when the server goes, and comes back with it") {
    if (!have_rtsp_server()) return;
    temp_dir tmp;
    const auto wav = pcm_wav(tmp);
    const auto port = std::to_string(free_tcp_port());
    const auto log = tmp.file("server.log");
    auto server = std::make_unique<child_process>(
        std::vector<std::string>{"/usr/bin/python3", fixture, port, wav, "--quit-after-play"}, log);
    REQUIRE(fixture_ready(log));
    config::rtsp_config cfg;
    cfg.enabled = false;  // pulls only
    cfg.pull = "rtsp://127.0.0.1:" + port + "/call";
    cfg.pull_retry_min_ms = 100;
    cfg.pull_retry_max_ms = 400;
    rtsp_served s(cfg);
    const auto expected = phone_recording_text();
    REQUIRE_FALSE(expected.empty());
    // The fixture plays the file once and exits: the connection drops, the call ends.
    REQUIRE(s.wait_ended("rtsp", 1, call_limit));
    CHECK(server->wait(std::chrono::seconds(10)) == 0);
    const auto first = s.of("rtsp")[0];
    const auto text = finals_text(first);
    MESSAGE("pulled over TCP: \"" << text << "\" (true transcript: \"" << expected << "\")");
    check_lossless_call_text(text);
    CHECK(first.end_reason == "server gone");
    CHECK(first.start.external_id == "/call");
    CHECK(first.start.metadata["streams"][0]["transport"] == "tcp");
    CHECK(first.start.metadata["streams"][0]["codec"] == "PCMU");
    // The server comes back on the same port: the pull reconnects by itself.
    server = std::make_unique<child_process>(std::vector<std::string>{"/usr/bin/python3", fixture, port, wav}, log);
    REQUIRE(fixture_ready(log));
    REQUIRE(poll_until(
        [&] {
          auto c = s.of("rtsp");
          return c.size() == 2 && c[0].live && !c[0].channels.empty() && !c[0].channels[0].partial.empty();
        },
        call_limit));
    // Stopping the service stops the pull: TEARDOWN, and the second call ends as stopped.
    s.rtsp->stop();
    REQUIRE(s.wait_ended("rtsp", 2, std::chrono::seconds(20)));
    CHECK(s.of("rtsp")[0].end_reason == "stopped");
  }

  TEST_CASE("a server that refuses RTP over TCP (461): the pull falls back to UDP, with the same exact text") {
    if (!have_rtsp_server()) return;
    temp_dir tmp;
    const auto wav = pcm_wav(tmp);
    const auto port = std::to_string(free_tcp_port());
    const auto log = tmp.file("server.log");
    child_process server({"/usr/bin/python3", fixture, port, wav, "--quit-after-play", "--udp-only"}, log);
    REQUIRE(fixture_ready(log));
    config::rtsp_config cfg;
    cfg.enabled = false;
    cfg.pull = "rtsp://127.0.0.1:" + port + "/call";
    cfg.pull_retry_max_ms = 60000;  // no second connection within the test
    rtsp_served s(cfg);
    REQUIRE(s.wait_ended("rtsp", 1, call_limit));
    const auto c = s.of("rtsp")[0];
    const auto text = finals_text(c);
    MESSAGE("pulled over UDP: \"" << text << "\"");
    check_lossless_call_text(text);
    CHECK(c.start.metadata["streams"][0]["transport"] == "udp");
  }
}

TEST_SUITE("rtsp pulls: RTCP") {
  TEST_CASE("gst-rtsp-server reads the pull's RTCP receiver reports, over TCP interleaved and over UDP: nothing lost, its SR echoed, its sequence covered") {
    if (!have_rtsp_server()) return;
    for (const bool udp : {false, true}) {
      CAPTURE(udp);
      temp_dir tmp;
      const auto wav = pcm_wav(tmp);
      const auto port = std::to_string(free_tcp_port());
      const auto log = tmp.file("server.log");
      std::vector<std::string> argv{"/usr/bin/python3", fixture, port, wav, "--quit-after-play", "--print-rr"};
      if (udp) argv.push_back("--udp-only");
      child_process server(argv, log);
      REQUIRE(fixture_ready(log));
      config::rtsp_config cfg;
      cfg.enabled = false;
      cfg.pull = "rtsp://127.0.0.1:" + port + "/call";
      cfg.pull_retry_max_ms = 60000;  // no second connection within the test
      cfg.rtcp_interval_ms = 500;     // several reports within the 6.3 s recording
      rtsp_served s(cfg);
      REQUIRE(s.wait_ended("rtsp", 1, call_limit));
      CHECK(server.wait(std::chrono::seconds(10)) == 0);
      const auto c = s.of("rtsp")[0];
      CHECK(c.start.metadata["streams"][0]["transport"] == (udp ? "udp" : "tcp"));
      check_lossless_call_text(finals_text(c));  // reporting takes nothing from the audio
      // What the server's rtpsession says it learned from our reports.
      const auto text = read_text(log);
      const auto at = text.find("rr {");
      REQUIRE_MESSAGE(at != std::string::npos, text);
      const auto rr = nlohmann::json::parse(text.substr(at + 3, text.find('\n', at) - at - 3));
      MESSAGE("gst-rtsp-server's view of the reports (" << (udp ? "udp" : "tcp") << "): " << rr.dump());
      REQUIRE(rr["have-rb"] == true);
      CHECK(rr["rb-packetslost"] == 0);  // loopback: nothing lost
      CHECK(rr["rb-fractionlost"] == 0);
      // Our LSR echoes the server's last SR and our DLSR is the time since it: GStreamer's round
      // trip (arrival - LSR - DLSR) is then the loopback's, well under 100 ms (6554 / 65536 s).
      CHECK(rr["rb-lsr"].get<int64_t>() != 0);
      CHECK(rr["rb-round-trip"].get<int64_t>() < 6554);
      // And sluice's side: what it received, the reports it sent, the SRs it read.
      const auto rtp = c.start.metadata["rtp"][0];
      const auto packets = rtp["packets"].get<int64_t>();
      CHECK(packets > 0);
      CHECK(rtp["lost"] == 0);
      // The last report is at most 750 ms older than the server's last packet (the server
      // lingers 1 s after it): it covers all but at most ~1/8 of the 6.3 s stream's packets
      // (GStreamer's payloader sends ~128 ms packets here, so that is a few). The payloader's
      // sequence number at the end is its last packet's or the next one's.
      const auto seq_at_end = rr["seq-at-end"].get<int64_t>();
      const auto highest = rr["rb-exthighestseq"].get<int64_t>();
      const auto behind = (seq_at_end - highest) & 0xffff;
      MESSAGE("sluice: " << rtp.dump() << "; last report " << behind << " packet(s) behind the server's sequence at the end");
      CHECK(behind <= 1 + packets / 8);
      CHECK(rtp["rtcp_sent"].get<int64_t>() >= 5);  // at least one per 750 ms of 6.3 s, less the first
      CHECK(rtp["sender_reports"].get<int64_t>() >= 1);
    }
  }
}

TEST_SUITE("rtsp pulls with credentials") {
  TEST_CASE("a Digest-protected server (gst-rtsp-server RTSPAuth): the URL's credentials get the exact text, no password kept") {
    if (!have_rtsp_server()) return;
    temp_dir tmp;
    const auto wav = pcm_wav(tmp);
    const auto port = std::to_string(free_tcp_port());
    const auto log = tmp.file("server.log");
    child_process server({"/usr/bin/python3", fixture, port, wav, "--quit-after-play", "--digest", "cam:s3cret pw"}, log);
    REQUIRE(fixture_ready(log));
    config::rtsp_config cfg;
    cfg.enabled = false;
    cfg.pull = "rtsp://cam:s3cret%20pw@127.0.0.1:" + port + "/call";
    cfg.pull_retry_max_ms = 60000;  // no second connection within the test
    rtsp_served s(cfg);
    REQUIRE(s.wait_ended("rtsp", 1, call_limit));
    const auto c = s.of("rtsp")[0];
    const auto text = finals_text(c);
    MESSAGE("pulled with Digest credentials: \"" << text << "\"");
    check_lossless_call_text(text);
    // The call's record (stored, served by /v1/calls) names the stream without its credentials.
    const auto url = c.start.metadata["url"].get<std::string>();
    CHECK(url == "rtsp://127.0.0.1:" + port + "/call");
    CHECK(c.start.metadata.dump().find("s3cret") == std::string::npos);
  }

  TEST_CASE("wrong or missing credentials for a Digest-protected server: no call, and the pull says why") {
    if (!have_rtsp_server()) return;
    temp_dir tmp;
    const auto wav = pcm_wav(tmp);
    const auto port = std::to_string(free_tcp_port());
    const auto log = tmp.file("server.log");
    child_process server({"/usr/bin/python3", fixture, port, wav, "--digest", "cam:right"}, log);
    REQUIRE(fixture_ready(log));
    config::rtsp_config cfg;
    cfg.enabled = false;
    cfg.pull = "rtsp://cam:wrong@127.0.0.1:" + port + "/call,rtsp://127.0.0.1:" + port + "/call";
    cfg.pull_retry_min_ms = 60000;  // one try each within the test
    cfg.pull_retry_max_ms = 60000;
    rtsp_served s(cfg);
    REQUIRE(poll_until(
        [&] {
          const auto f = s.rtsp->pull_failures();
          return f.size() == 2 && !f[0].empty() && !f[1].empty();
        },
        std::chrono::seconds(20)));
    const auto f = s.rtsp->pull_failures();
    MESSAGE("wrong password: " << f[0] << " | no credentials: " << f[1]);
    CHECK(f[0].find("refused the URL's credentials") != std::string::npos);
    CHECK(f[1].find("needs credentials (401)") != std::string::npos);
    CHECK(f[0].find("wrong") == std::string::npos);
    CHECK(s.of("rtsp").empty());
  }
}
