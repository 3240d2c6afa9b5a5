// Pushes from real RTSP clients, unmodified, into the RTSP service of a served engine, all on
// 127.0.0.1: ffmpeg over TCP (interleaved) and UDP, GStreamer's rtspclientsink. The audio is the
// committed phone recording tests/data/e2e/cancelled_march_8k_mulaw.wav (mu-law, so G.711
// through RTP gives the very samples of the file); each push must give exactly its true
// transcript (tests/data/e2e/cancelled_march_8k_mulaw.txt, written by a person: the SIP path
// gives it word for word too) and a clean end of the call.
#include "tests/net/rtsp/rtsp_test_util.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {
constexpr auto peer_limit = std::chrono::seconds(45);
// The recording lasts 6.3 s; GStreamer gets this long to push it and exit.
constexpr auto gst_limit = std::chrono::seconds(25);

bool have_ffmpeg() {
  if (have_tool("ffmpeg -version")) return true;
  MESSAGE("SKIPPED: ffmpeg is not installed (tools/setup.sh installs it)");
  return false;
}

// ffmpeg pushing the recording in real time (-re) to `url` over `transport`.
std::vector<std::string> ffmpeg_push(const std::string& url, const std::string& transport) {
  return {"ffmpeg", "-nostdin", "-loglevel", "warning", "-re", "-i", rtsp_recording, "-c:a", "pcm_mulaw",
          "-f",     "rtsp",     "-rtsp_transport", transport, url};
}

// One push of the whole recording; the call it left, once over.
net::calls::call_record push_whole(rtsp_served& s, const temp_dir& tmp, const std::vector<std::string>& argv) {
  const auto log = tmp.file("peer.log");
  child_process peer(argv, log);
  const int rc = peer.wait(peer_limit);
  INFO("peer output: " << read_text(log));
  REQUIRE(rc == 0);
  REQUIRE(s.wait_ended("rtsp", 1));
  return s.of("rtsp")[0];
}
}  // namespace

TEST_SUITE("rtsp pushes") {
  TEST_CASE("ffmpeg pushes over TCP interleaved: one call with the recording's exact transcript, ended by TEARDOWN") {
    if (!have_ffmpeg()) return;
    temp_dir tmp;
    rtsp_served s;
    const auto expected = true_transcript();
    REQUIRE_FALSE(expected.empty());
    const auto c = push_whole(s, tmp, ffmpeg_push(s.url("call1"), "tcp"));
    const auto text = finals_text(c);
    MESSAGE("pushed over TCP: \"" << text << "\" (true transcript: \"" << expected << "\")");
    CHECK(text == expected);
    CHECK(c.end_reason == "teardown");
    CHECK(c.start.external_id == "/call1");
    REQUIRE(c.channels.size() == 1);
    CHECK(c.channels[0].label == "mono");
    CHECK(c.start.metadata["streams"][0]["codec"] == "PCMU");
    CHECK(c.start.metadata["streams"][0]["transport"] == "tcp");
    CHECK(c.start.metadata["rtp"][0]["packets"].get<int>() > 0);
    CHECK(c.start.metadata["rtp"][0]["lost"].get<int>() == 0);
    CHECK(poll_until([&] { return s.rtsp->live_sessions() == 0 && s.rtsp->connections() == 0; },
                     std::chrono::seconds(10)));
  }

  TEST_CASE("ffmpeg pushes over UDP: RTP to the server port of the SETUP reply, the same exact text") {
    if (!have_ffmpeg()) return;
    temp_dir tmp;
    rtsp_served s;
    const auto expected = true_transcript();
    const auto c = push_whole(s, tmp, ffmpeg_push(s.url("call2"), "udp"));
    const auto text = finals_text(c);
    MESSAGE("pushed over UDP: \"" << text << "\"");
    CHECK(text == expected);
    CHECK(c.end_reason == "teardown");
    CHECK(c.start.metadata["streams"][0]["transport"] == "udp");
    CHECK(c.start.metadata["rtp"][0]["packets"].get<int>() > 0);
    CHECK(poll_until([&] { return s.rtsp->live_sessions() == 0; }, std::chrono::seconds(10)));
  }

  TEST_CASE("GStreamer rtspclientsink pushes: the same exact text") {
    if (!have_tool("gst-inspect-1.0 rtspclientsink")) {
      MESSAGE("SKIPPED: GStreamer's rtspclientsink is not installed (gstreamer1.0-rtsp; tools/setup.sh installs it)");
      return;
    }
    temp_dir tmp;
    rtsp_served s;
    const auto expected = true_transcript();
    // The recording's mu-law bytes, raw (sox, lossless): GStreamer 1.22's rtspclientsink never
    // gets past "waiting for streams to be blocked" behind wavparse (checked against ffmpeg's
    // own RTSP listener too), but streams a raw file. -e: at the end an EOS goes down the
    // pipeline and rtspclientsink tears down.
    const auto raw = tmp.file("call.ulaw");
    REQUIRE(sox("\"" + rtsp_recording + "\" -t raw \"" + raw + "\""));
    const auto log = tmp.file("gst.log");
    child_process peer({"gst-launch-1.0", "-e", "filesrc", "location=" + raw, "!", "rawaudioparse", "use-sink-caps=false",
                        "format=mulaw", "sample-rate=8000", "num-channels=1", "!", "rtspclientsink",
                        "location=" + s.url("gst1"), "protocols=tcp"},
                       log);
    // gst-launch 1.22 was once seen not to exit within 45 s of its RECORD (1 of 4 runs under
    // load; where it stopped is not known): then it is killed after the limit and said so, and
    // the call's text is what is judged (empty if it never streamed).
    const int rc = peer.wait(gst_limit);
    if (rc != 0) MESSAGE("gst-launch did not exit by itself (status " << rc << "); output: " << read_text(log));
    REQUIRE(s.wait_ended("rtsp", 1));
    const auto c = s.of("rtsp")[0];
    const auto text = finals_text(c);
    MESSAGE("pushed by GStreamer: \"" << text << "\", ended: " << c.end_reason);
    CHECK(text == expected);
    CHECK(c.start.external_id == "/gst1");
  }

  TEST_CASE("the pusher dies mid-call: the call ends when the TCP connection drops, with the words heard so far") {
    if (!have_ffmpeg()) return;
    temp_dir tmp;
    rtsp_served s;
    const auto expected = true_transcript();
    child_process peer(ffmpeg_push(s.url("dropped"), "tcp"), tmp.file("peer.log"));
    // Killed (no TEARDOWN) once the engine has heard some of the sentence.
    REQUIRE(poll_until(
        [&] {
          auto c = s.of("rtsp");
          return c.size() == 1 && !c[0].channels.empty() && !c[0].channels[0].partial.empty();
        },
        peer_limit));
    peer.kill();
    REQUIRE(s.wait_ended("rtsp", 1));
    const auto c = s.of("rtsp")[0];
    CHECK(c.end_reason == "connection closed");
    const auto text = finals_text(c);
    MESSAGE("cut by a dropped connection: \"" << text << "\"");
    // The words heard before the drop were finished: every word but the last (cut by the drop)
    // is the transcript's word at its place.
    const auto got = words_of(text), ref = words_of(expected);
    REQUIRE_FALSE(got.empty());
    CHECK(got.size() <= ref.size());
    for (std::size_t i = 0; i + 1 < got.size() && i < ref.size(); ++i) CHECK(got[i] == ref[i]);
    CHECK(poll_until([&] { return s.rtsp->live_sessions() == 0 && s.rtsp->connections() == 0; },
                     std::chrono::seconds(10)));
  }
}
