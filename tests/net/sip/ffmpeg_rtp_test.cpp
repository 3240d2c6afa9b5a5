// ffmpeg as the RTP sender of a SIP call: SIPp signals the call (its SDP names the port ffmpeg
// sends from), ffmpeg streams the committed phone recording as plain RTP (`-f rtp`, paced by -re)
// to the port of sluice's answer, unmodified. PCMU carries the very mu-law samples of the file,
// so the text must be word for word what the engine makes of the file read directly (and within
// the phone WER target of its true transcript), as over RTSP; Opus (libopus
// in ffmpeg, RFC 7587 payload) is judged by the phone WER target.
#include "tests/net/sip/sip_test_util.hpp"
#include "tests/common/phone_recording.hpp"

#include <future>

using namespace sluice;
using namespace sluice::test;

namespace {
// The recording lasts 6.3 s; SIPp hangs up this long after the answer, once ffmpeg is done.
constexpr int call_ms = 9000;

bool have_ffmpeg() {
  if (std::system("ffmpeg -version >/dev/null 2>&1") == 0) return true;
  MESSAGE("SKIPPED: ffmpeg is not installed (tools/setup.sh installs it)");
  return false;
}

struct rtp_call_result {
  net::calls::call_record call;
  int ffmpeg_status = -1;
  std::string ffmpeg_output;
};

// One call: SIPp offers `rtpmap` on payload type `pt` from port P; once the call is up, ffmpeg
// sends the recording with `codec_args` from port P to the service's single RTP port.
rtp_call_result call_with_ffmpeg(const std::string& rtpmap, int pt, const std::string& codec_args) {
  temp_dir tmp;
  config::sip_config cfg;
  cfg.rtp_port_min = free_rtp_base(4);
  cfg.rtp_port_max = cfg.rtp_port_min + 1;  // one stream: the test knows the service's port
  sip_served s(cfg);
  const int ffmpeg_port = cfg.rtp_port_min + 2;
  auto sipp = std::async(std::launch::async, [&] {
    return run_sipp(s, tmp, "uac_media_peer.xml",
                    {{"@RTP_PORT@", std::to_string(ffmpeg_port)}, {"@PT@", std::to_string(pt)}, {"@RTPMAP@", rtpmap},
                     {"@SDP_EXTRA@", ""}, {"@ANSWER_HAS@", "a=rtpmap:" + std::to_string(pt) + " " + rtpmap},
                     {"@PAUSE_MS@", std::to_string(call_ms)}},
                    "-m 1");
  });
  rtp_call_result out;
  if (!s.wait_for([&] { return s.sip_calls().size() == 1; })) FAIL("no call: " << sipp.get().output);
  const auto log = tmp.file("ffmpeg.log");
  // pkt_size 172: 12 bytes of header and 160 of G.711, a 20 ms packet as phones send.
  const std::string cmd = "timeout 30 ffmpeg -nostdin -loglevel warning -re -i " + phone_recording + " " + codec_args +
                          " -payload_type " + std::to_string(pt) + " -f rtp \"rtp://127.0.0.1:" +
                          std::to_string(cfg.rtp_port_min) + "?localrtpport=" + std::to_string(ffmpeg_port) +
                          "&pkt_size=172\" > " + log + " 2>&1";
  const int st = std::system(cmd.c_str());
  out.ffmpeg_status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  const auto logged = read_bytes(log);
  out.ffmpeg_output.assign(logged.begin(), logged.end());
  const auto r = sipp.get();
  INFO(r.output);
  REQUIRE(r.status == 0);  // the answer took the offered codec
  out.call = s.ended_call();
  return out;
}
}  // namespace

TEST_SUITE("sip calls with ffmpeg as the RTP sender") {
  TEST_CASE("ffmpeg sends PCMU as plain RTP: the call's text is the file's, word for word") {
    if (!have_ffmpeg()) return;
    const auto r = call_with_ffmpeg("PCMU/8000", 0, "-c:a pcm_mulaw -ar 8000 -ac 1");
    INFO("ffmpeg: " << r.ffmpeg_output);
    CHECK(r.ffmpeg_status == 0);
    const auto& c = r.call;
    const auto text = finals_text(c);
    MESSAGE("ffmpeg PCMU over RTP: \"" << text << "\"");
    check_lossless_call_text(text);
    CHECK(c.start.metadata["streams"][0]["codec"] == "PCMU");
    const auto& rtp = c.start.metadata["rtp"][0];
    MESSAGE("rtp: " << rtp.dump());
    CHECK(rtp["not_rtp"].get<int>() == 0);
    CHECK(rtp["lost"].get<int>() == 0);
    // 6.3 s in 20 ms packets.
    CHECK(rtp["datagrams"].get<int>() >= 300);
  }

  TEST_CASE("ffmpeg sends libopus as plain RTP (opus/48000/2): within the phone WER target") {
    if (!have_ffmpeg()) return;
    if (std::system("ffmpeg -hide_banner -encoders 2>/dev/null | grep -q libopus") != 0) {
      MESSAGE("SKIPPED: this ffmpeg has no libopus encoder");
      return;
    }
    const auto r = call_with_ffmpeg("opus/48000/2", 111, "-c:a libopus -b:a 24k -ar 48000 -ac 1");
    INFO("ffmpeg: " << r.ffmpeg_output);
    CHECK(r.ffmpeg_status == 0);
    const auto text = finals_text(r.call);
    const double wer = word_error_rate(phone_recording_text(), text);
    MESSAGE("ffmpeg Opus over RTP: \"" << text << "\", word error rate " << wer);
    CHECK(wer <= phone_wer_target);
    CHECK(r.call.start.metadata["streams"][0]["codec"] == "opus");
  }
}
