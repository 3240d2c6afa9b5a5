// Pulls from a real RTSP server: GStreamer's gst-rtsp-server (through python3-gi, the fixture
// tests/net/rtsp/rtsp_wav_server.py) serving the committed phone recording as PCMU. The pulled
// call must give exactly the recording's true transcript, end when the server goes away, come
// back when the server does (reconnect with back-off), and end when the pull is stopped.
#include "tests/net/rtsp/rtsp_test_util.hpp"

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
  REQUIRE(sox("\"" + rtsp_recording + "\" -e signed-integer -b 16 \"" + wav + "\""));
  return wav;
}

// Waits for the fixture to print "ready".
bool fixture_ready(const std::string& log) {
  return poll_until([&] { return read_text(log).find("ready") != std::string::npos; }, std::chrono::seconds(20));
}
}  // namespace

TEST_SUITE("rtsp pulls") {
  TEST_CASE("a pull over TCP interleaved: the exact transcript, the call ends when the server goes, and comes back with it") {
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
    const auto expected = true_transcript();
    REQUIRE_FALSE(expected.empty());
    // The fixture plays the file once and exits: the connection drops, the call ends.
    REQUIRE(s.wait_ended("rtsp", 1, call_limit));
    CHECK(server->wait(std::chrono::seconds(10)) == 0);
    const auto first = s.of("rtsp")[0];
    const auto text = finals_text(first);
    MESSAGE("pulled over TCP: \"" << text << "\" (true transcript: \"" << expected << "\")");
    CHECK(text == expected);
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
    const auto expected = true_transcript();
    REQUIRE(s.wait_ended("rtsp", 1, call_limit));
    const auto c = s.of("rtsp")[0];
    const auto text = finals_text(c);
    MESSAGE("pulled over UDP: \"" << text << "\"");
    CHECK(text == expected);
    CHECK(c.start.metadata["streams"][0]["transport"] == "udp");
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
    const auto expected = true_transcript();
    REQUIRE(s.wait_ended("rtsp", 1, call_limit));
    const auto c = s.of("rtsp")[0];
    const auto text = finals_text(c);
    MESSAGE("pulled with Digest credentials: \"" << text << "\"");
    CHECK(text == expected);
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
