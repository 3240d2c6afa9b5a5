// Pushes from real RTSP clients, unmodified, into the RTSP service of a served engine, all on
// 127.0.0.1: ffmpeg over TCP (interleaved) and UDP, GStreamer's rtspclientsink. The audio is the
// committed phone recording tests/data/e2e/cancelled_march_8k_mulaw.wav (mu-law, so G.711
// through RTP gives the very samples of the file); each push must give word for word what the
// engine makes of the file read directly (tests/common/file_transcript.hpp), within the phone
// WER target of its true transcript (tests/data/e2e/cancelled_march_8k_mulaw.txt, written by a
// person), and a clean end of the call.
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
  return {"ffmpeg", "-nostdin", "-loglevel", "warning", "-re", "-i", phone_recording, "-c:a", "pcm_mulaw",
          "-f",     "rtsp",     "-rtsp_transport", transport, url};
}

// The same push with the recording encoded by libopus (RTP clock 48 kHz, RFC 7587).
std::vector<std::string> ffmpeg_push_opus(const std::string& url) {
  return {"ffmpeg", "-nostdin", "-loglevel", "warning", "-re", "-i", phone_recording, "-c:a", "libopus",
          "-b:a",   "24k",     "-ar",       "48000",   "-f", "rtsp", "-rtsp_transport", "tcp", url};
}

// `url` (rtsp://host:port/name) with user information in front of the host.
std::string with_userinfo(const std::string& url, const std::string& userinfo) {
  return "rtsp://" + userinfo + "@" + url.substr(7);
}

// Receiver reports every 500 ms on average, so that a 6.3 s push sends several.
config::rtsp_config rtcp_every_500ms() {
  config::rtsp_config c;
  c.rtcp_interval_ms = 500;
  return c;
}

// ffmpeg sends an RTCP sender report with its first packet and every 5 s after (interleaved on
// the RTCP channel over TCP, to the server port + 1 over UDP): sluice read at least one, all
// valid; and it sent its receiver reports, at most 750 ms apart, over the 6.3 s push (they are
// checked field by field against GStreamer in rtsp_pull_test and by hand in rtp_audio_stream_test).
void check_rtcp(const net::calls::call_record& c) {
  const auto rtp = c.start.metadata["rtp"][0];
  MESSAGE("RTP/RTCP of the push: " << rtp.dump());
  CHECK(rtp["sender_reports"].get<int>() >= 1);
  CHECK(rtp["rtcp_invalid"].get<int>() == 0);
  CHECK(rtp["rtcp_sent"].get<int>() >= 5);
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
  TEST_CASE("ffmpeg pushes over TCP interleaved: one call with the file's exact text, ended by TEARDOWN, its RTCP SRs read and our reports sent") {
    if (!have_ffmpeg()) return;
    temp_dir tmp;
    rtsp_served s(rtcp_every_500ms());
    const auto expected = phone_recording_text();
    REQUIRE_FALSE(expected.empty());
    const auto c = push_whole(s, tmp, ffmpeg_push(s.url("call1"), "tcp"));
    const auto text = finals_text(c);
    MESSAGE("pushed over TCP: \"" << text << "\" (true transcript: \"" << expected << "\")");
    check_lossless_call_text(text);
    CHECK(c.end_reason == "teardown");
    CHECK(c.start.external_id == "/call1");
    REQUIRE(c.channels.size() == 1);
    CHECK(c.channels[0].label == "mono");
    CHECK(c.start.metadata["streams"][0]["codec"] == "PCMU");
    CHECK(c.start.metadata["streams"][0]["transport"] == "tcp");
    CHECK(c.start.metadata["rtp"][0]["packets"].get<int>() > 0);
    CHECK(c.start.metadata["rtp"][0]["lost"].get<int>() == 0);
    check_rtcp(c);
    CHECK(poll_until([&] { return s.rtsp->live_sessions() == 0 && s.rtsp->connections() == 0; },
                     std::chrono::seconds(10)));
  }

  TEST_CASE("ffmpeg pushes over UDP: RTP to the server port of the SETUP reply, the same exact text, its RTCP SRs read and our reports sent") {
    if (!have_ffmpeg()) return;
    temp_dir tmp;
    rtsp_served s(rtcp_every_500ms());
    const auto c = push_whole(s, tmp, ffmpeg_push(s.url("call2"), "udp"));
    const auto text = finals_text(c);
    MESSAGE("pushed over UDP: \"" << text << "\"");
    check_lossless_call_text(text);
    CHECK(c.end_reason == "teardown");
    CHECK(c.start.metadata["streams"][0]["transport"] == "udp");
    CHECK(c.start.metadata["rtp"][0]["packets"].get<int>() > 0);
    check_rtcp(c);
    CHECK(poll_until([&] { return s.rtsp->live_sessions() == 0; }, std::chrono::seconds(10)));
  }

  TEST_CASE("ffmpeg pushes libopus over TCP: an opus/48000/2 stream decoded at 16 kHz, within the phone WER target") {
    if (!have_ffmpeg()) return;
    if (!have_tool("ffmpeg -hide_banner -encoders | grep -q libopus")) {
      MESSAGE("SKIPPED: this ffmpeg has no libopus encoder");
      return;
    }
    temp_dir tmp;
    rtsp_served s;
    const auto expected = phone_recording_text();
    const auto c = push_whole(s, tmp, ffmpeg_push_opus(s.url("opus1")));
    const auto text = finals_text(c);
    const double wer = word_error_rate(expected, text);
    MESSAGE("pushed as Opus: \"" << text << "\", word error rate " << wer);
    CHECK(wer <= phone_wer_target);  // Opus changes the samples: judged by WER, not word for word
    CHECK(c.end_reason == "teardown");
    CHECK(c.start.metadata["streams"][0]["codec"] == "opus");
    CHECK(c.start.metadata["streams"][0]["sample_rate"] == 16000);
    CHECK(c.start.metadata["rtp"][0]["packets"].get<int>() > 0);
    CHECK(c.start.metadata["rtp"][0]["lost"].get<int>() == 0);
  }

  TEST_CASE("with API keys, ffmpeg pushing rtsp://user:<key>@ gets through Basic, and the call is the key's tenant's") {
    if (!have_ffmpeg()) return;
    temp_dir tmp;
    rtsp_keys keys;
    rtsp_served s({}, keys.check());
    const auto c = push_whole(s, tmp, ffmpeg_push(with_userinfo(s.url("keyed"), "agent:" + keys.streamer.key), "tcp"));
    const auto text = finals_text(c);
    MESSAGE("pushed with a key: \"" << text << "\"");
    check_lossless_call_text(text);
    CHECK(c.start.tenant == "acme");
    CHECK(c.end_reason == "teardown");
  }

  TEST_CASE("with API keys, a push whose key is revoked mid-call is disconnected: ffmpeg fails, the call ends key_revoked") {
    if (!have_ffmpeg()) return;
    temp_dir tmp;
    rtsp_keys keys;
    auto streams = std::make_shared<net::auth::key_streams>();
    rtsp_served s({}, keys.check(), {}, streams);
    const auto log = tmp.file("peer.log");
    child_process peer(ffmpeg_push(with_userinfo(s.url("revoked"), "agent:" + keys.streamer.key), "tcp"), log);
    // Revoked once the engine has heard some of the call (the push lasts 6.3 s, in real time).
    REQUIRE(poll_until(
        [&] {
          auto c = s.of("rtsp");
          return c.size() == 1 && !c[0].channels.empty() && !c[0].channels[0].partial.empty();
        },
        peer_limit));
    CHECK(streams->open(keys.streamer.record.id) == 1);
    // What the server does on a keys-file reload that drops the key (net/server.cpp).
    CHECK(streams->cut({{keys.streamer.record.id, std::nullopt}}) == 1);
    const int rc = peer.wait(peer_limit);
    MESSAGE("ffmpeg after the revocation exited " << rc << ": " << read_text(log));
    CHECK(rc != 0);
    REQUIRE(s.wait_ended("rtsp", 1));
    CHECK(s.of("rtsp")[0].end_reason == "error: key_revoked");
    CHECK(poll_until([&] { return s.rtsp->live_sessions() == 0 && s.rtsp->connections() == 0; },
                     std::chrono::seconds(10)));
    CHECK(poll_until([&] { return streams->open(keys.streamer.record.id) == 0; }, std::chrono::seconds(10)));
  }

  TEST_CASE("with API keys, a push without a key, with a wrong key or with a read-only key gets no call") {
    if (!have_ffmpeg()) return;
    temp_dir tmp;
    rtsp_keys keys;
    rtsp_served s({}, keys.check());
    const std::string wrong = keys.streamer.key.substr(0, keys.streamer.key.size() - 1) +
                              (keys.streamer.key.back() == '0' ? "1" : "0");
    const std::vector<std::pair<std::string, std::string>> tries = {
        {"none", s.url("nokey")},
        {"wrong key", with_userinfo(s.url("wrongkey"), "agent:" + wrong)},
        {"read-only key", with_userinfo(s.url("readkey"), "agent:" + keys.reader.key)}};
    for (const auto& [what, url] : tries) {
      CAPTURE(what);
      const auto log = tmp.file("peer.log");
      child_process peer(ffmpeg_push(url, "tcp"), log);
      const int rc = peer.wait(peer_limit);
      const auto out = read_text(log);
      MESSAGE(what << ": ffmpeg exited " << rc << ": " << out);
      CHECK(rc != 0);
      CHECK((out.find("401") != std::string::npos || out.find("403") != std::string::npos ||
             out.find("Unauthorized") != std::string::npos || out.find("Forbidden") != std::string::npos));
    }
    CHECK(s.of("rtsp").empty());
    CHECK(poll_until([&] { return s.rtsp->live_sessions() == 0 && s.rtsp->connections() == 0; }, std::chrono::seconds(10)));
  }

  TEST_CASE("GStreamer rtspclientsink pushes: the same exact text") {
    if (!have_tool("gst-inspect-1.0 rtspclientsink")) {
      MESSAGE("SKIPPED: GStreamer's rtspclientsink is not installed (gstreamer1.0-rtsp; tools/setup.sh installs it)");
      return;
    }
    temp_dir tmp;
    rtsp_served s;
    // The recording's mu-law bytes, raw (sox, lossless): GStreamer 1.22's rtspclientsink never
    // gets past "waiting for streams to be blocked" behind wavparse (checked against ffmpeg's
    // own RTSP listener too), but streams a raw file. -e: at the end an EOS goes down the
    // pipeline and rtspclientsink tears down.
    const auto raw = tmp.file("call.ulaw");
    REQUIRE(sox("\"" + phone_recording + "\" -t raw \"" + raw + "\""));
    const auto log = tmp.file("gst.log");
    // gst-launch 1.22 was once seen not to exit within 45 s of its RECORD (1 of 4 runs under
    // load; where it stopped is not known): then it is killed after gst_limit and said so, and
    // the call's text is what is judged (empty if it never streamed). Under the ASan suite's
    // load it was also seen to hang before it ever connected (no call at all, no output): a run
    // that ends without any RTSP call (hung or failed) is tried once more, visibly.
    for (int attempt = 1; attempt <= 2; ++attempt) {
      child_process peer({"gst-launch-1.0", "-e", "filesrc", "location=" + raw, "!", "rawaudioparse",
                          "use-sink-caps=false", "format=mulaw", "sample-rate=8000", "num-channels=1", "!",
                          "rtspclientsink", "location=" + s.url("gst1"), "protocols=tcp"},
                         log);
      const int rc = peer.wait(gst_limit);
      if (rc == 0) break;
      MESSAGE("gst-launch did not exit by itself (attempt " << attempt << ", status " << rc
                                                             << "); output: " << read_text(log));
      if (!s.of("rtsp").empty()) break;
      MESSAGE("gst-launch never connected (no RTSP call): " << (attempt == 1 ? "trying once more" : "giving up"));
    }
    REQUIRE(s.wait_ended("rtsp", 1));
    const auto c = s.of("rtsp")[0];
    const auto text = finals_text(c);
    MESSAGE("pushed by GStreamer: \"" << text << "\", ended: " << c.end_reason);
    check_lossless_call_text(text);
    CHECK(c.start.external_id == "/gst1");
  }

  TEST_CASE("the pusher dies mid-call: the call ends when the TCP connection drops, with the words heard so far") {
    if (!have_ffmpeg()) return;
    temp_dir tmp;
    rtsp_served s;
    const auto expected = phone_recording_engine_text();  // the whole file read directly
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
    // is the word the engine gives the whole file at its place.
    const auto got = words_of(text), ref = words_of(expected);
    REQUIRE_FALSE(got.empty());
    CHECK(got.size() <= ref.size());
    for (std::size_t i = 0; i + 1 < got.size() && i < ref.size(); ++i) CHECK(got[i] == ref[i]);
    CHECK(poll_until([&] { return s.rtsp->live_sessions() == 0 && s.rtsp->connections() == 0; },
                     std::chrono::seconds(10)));
  }
}
