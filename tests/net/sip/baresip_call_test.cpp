// baresip (Debian's baresip-core, unmodified) as the caller: a real SIP phone that dials sluice,
// plays the committed phone recording into the call from a WAV file (its aufile source), and
// hangs up when the file ends. The call must appear in the registry with its channel and text:
// PCMU carries the very mu-law samples of the recording, so the text is word for word what the
// engine makes of the file read directly, within the phone WER target of its true transcript (as
// over RTSP and ffmpeg's RTP); Opus (baresip's opus module) is judged by the phone
// WER target.
#include "tests/net/sip/sip_test_util.hpp"
#include "tests/common/phone_recording.hpp"

#include <fstream>

using namespace sluice;
using namespace sluice::test;

namespace {
// baresip quits this long after it starts (-t); the file (6.3 s) ends the call well before.
constexpr int baresip_quit_s = 20;

bool have_baresip() {
  if (std::system("command -v baresip >/dev/null 2>&1") == 0 &&
      std::system("test -f /usr/lib/baresip/modules/aufile.so") == 0)
    return true;
  MESSAGE("SKIPPED: baresip is not installed (tools/setup.sh installs baresip-core)");
  return false;
}

// baresip listens for SIP on the port its config gives (UDP and TCP) and for SIP over TLS on the
// port above it: a port P with P and P + 1 free now for both.
uint16_t free_port_pair() {
  namespace asio = boost::asio;
  asio::io_context ioc;
  const auto lo = asio::ip::make_address("127.0.0.1");
  for (int tries = 0; tries < 100; ++tries) {
    const auto p = free_sip_port();
    if (p == 65535) continue;
    boost::system::error_code ec;
    asio::ip::udp::socket u(ioc);
    u.open(asio::ip::udp::v4(), ec);
    if (!ec) u.bind(asio::ip::udp::endpoint(lo, static_cast<uint16_t>(p + 1)), ec);
    asio::ip::tcp::acceptor t(ioc);
    if (!ec) t.open(asio::ip::tcp::v4(), ec);
    if (!ec) t.bind(asio::ip::tcp::endpoint(lo, static_cast<uint16_t>(p + 1)), ec);
    if (!ec) return p;
  }
  FAIL("no two free ports in a row");
  return 0;
}

struct baresip_result {
  int status = -1;
  std::string output;
};

// baresip with a config of its own in `tmp`: SIP on a free loopback port, the recording (as
// 16-bit PCM, what aufile reads) as its microphone, `codec_modules` as its codecs; it dials
// sluice at once and quits after baresip_quit_s.
baresip_result call_from_baresip(const sip_served& s, const temp_dir& tmp, const std::vector<std::string>& codec_modules,
                                 const std::string& target = {}, const std::string& cafile = {},
                                 const std::string& mic_format = "-r 8000 -c 1", const std::string& account_params = {}) {
  // aufile reads only files at the codec's own rate and channels (48 kHz stereo for Opus).
  const auto wav = tmp.file("mic.wav");
  REQUIRE(sox(phone_recording + " -e signed-integer -b 16 " + mic_format + " " + wav));
  const auto conf = tmp.file("baresip");
  REQUIRE(std::system(("mkdir -p " + conf).c_str()) == 0);
  const int rtp = free_rtp_base(4);
  {
    std::ofstream c(conf + "/config");
    c << "module_path /usr/lib/baresip/modules\n"
      << "sip_listen 127.0.0.1:" << free_port_pair() << "\n"
      << "rtp_ports " << rtp << "-" << rtp + 3 << "\n"
      << "audio_source aufile," << wav << "\n"
      << "audio_player aufile," << tmp.file("heard.wav") << "\n"
      << "audio_alert aufile," << tmp.file("alert.wav") << "\n"
      << "module menu.so\nmodule aufile.so\n";
    if (!cafile.empty()) c << "sip_cafile " << cafile << "\n";
    for (const auto& m : codec_modules) c << "module " << m << "\n";
    c << "module account.so\nmodule_app contact.so\n";
    std::ofstream(conf + "/accounts") << "<sip:caller@127.0.0.1>;regint=0" << account_params << "\n";
    std::ofstream(conf + "/contacts") << "";
  }
  const auto log = tmp.file("baresip.log");
  const std::string cmd = "timeout " + std::to_string(baresip_quit_s + 20) + " baresip -f " + conf +
                          " -e \"/dial " + (target.empty() ? "sip:sluice@127.0.0.1:" + std::to_string(s.cfg.port) : target) +
                          "\" -t " +
                          std::to_string(baresip_quit_s) + " > " + log + " 2>&1";
  baresip_result r;
  const int st = std::system(cmd.c_str());
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  const auto b = read_bytes(log);
  r.output.assign(b.begin(), b.end());
  return r;
}

// SIP over TLS on a free port with a self-signed certificate for 127.0.0.1 (made by the openssl
// command line) in tmp/sip.crt, which baresip is given as its CA.
config::sip_config tls_config(const temp_dir& tmp) {
  const auto cert = tmp.file("sip.crt"), key = tmp.file("sip.key");
  REQUIRE(std::system(("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
                       "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
                       key + " -out " + cert + " > " + tmp.file("openssl.log") + " 2>&1")
                          .c_str()) == 0);
  config::sip_config cfg;
  cfg.tls = true;
  cfg.tls_port = free_sip_port();
  cfg.tls_cert_file = cert;
  cfg.tls_key_file = key;
  return cfg;
}

bool have_baresip_srtp() {
  if (!have_baresip()) return false;
  if (std::system("test -f /usr/lib/baresip/modules/srtp.so") == 0) return true;
  MESSAGE("SKIPPED: baresip has no srtp module");
  return false;
}

// The stream's RTP figures as the call's metadata holds them after the end.
void check_srtp_stream(const net::calls::call_record& c) {
  CHECK(c.start.metadata["streams"][0]["srtp"] == "AES_CM_128_HMAC_SHA1_80");
  const auto& rtp = c.start.metadata["rtp"][0];
  MESSAGE("rtp: " << rtp.dump());
  // 6.3 s of 20 ms packets, every one authentic: none failed, none replayed, none unreadable.
  CHECK(rtp["datagrams"].get<int>() >= 300);
  CHECK(rtp["srtp_auth_failed"] == 0);
  CHECK(rtp["srtp_replayed"] == 0);
  CHECK(rtp["not_rtp"] == 0);
}

net::calls::call_record the_call(const sip_served& s, const baresip_result& r) {
  INFO("baresip: " << r.output);
  CHECK(r.status == 0);
  // baresip's own account of the call: established, then ended by the end of its file.
  CHECK(r.output.find("Call established") != std::string::npos);
  CHECK(r.output.find("end of file") != std::string::npos);
  return s.ended_call();
}
}  // namespace

TEST_SUITE("sip calls from baresip") {
  TEST_CASE("baresip dials with G.711 and plays the recording: the call's text is the file's, word for word") {
    if (!have_baresip()) return;
    temp_dir tmp;
    sip_served s;
    const auto c = the_call(s, call_from_baresip(s, tmp, {"g711.so"}));
    CHECK(c.end_reason == "hangup");
    REQUIRE(c.channels.size() == 1);
    CHECK(c.start.metadata["streams"][0]["codec"] == "PCMU");
    const auto text = finals_text(c);
    MESSAGE("from baresip over PCMU: \"" << text << "\"");
    check_lossless_call_text(text);
    CHECK(s.sip->live_calls() == 0);
  }

  TEST_CASE("baresip dials over TLS (sips) with the test's CA: the call comes over TLS with the file's exact text") {
    if (!have_baresip()) return;
    temp_dir tmp;
    const auto cert = tmp.file("sip.crt");
    sip_served s(tls_config(tmp));
    const auto target = "sip:sluice@127.0.0.1:" + std::to_string(s.cfg.tls_port) + ";transport=tls";
    const auto c = the_call(s, call_from_baresip(s, tmp, {"g711.so"}, target, cert));
    CHECK(c.start.metadata["transport"] == "tls");
    CHECK(c.end_reason == "hangup");
    const auto text = finals_text(c);
    MESSAGE("from baresip over SIP/TLS: \"" << text << "\"");
    check_lossless_call_text(text);
  }

  TEST_CASE("a TLS key that is not PEM is a clear error at start, naming the file") {
    temp_dir tmp;
    const auto cert = tmp.file("bad.crt");
    std::ofstream(cert) << "not a certificate\n";
    config::sluice_config all;
    all.model.dir = SLUICE_SOURCE_DIR "/models/default";
    auto res = actors::engine_resources::create(all, sip_model());
    REQUIRE(res.has_value());
    auto engine = actors::engine::start(*res);
    config::sip_config cfg;
    cfg.port = free_sip_port();
    cfg.tls = true;
    cfg.tls_port = free_sip_port();
    cfg.tls_cert_file = cert;
    cfg.tls_key_file = cert;
    auto calls = std::make_shared<net::calls::call_registry>();
    auto started = net::sip::sip_service::start(*engine, calls, cfg);
    REQUIRE_FALSE(started.has_value());
    CHECK(started.error().message.find("bad.crt") != std::string::npos);
    CHECK(started.error().message.find("not PEM") != std::string::npos);
  }

  TEST_CASE("baresip with its opus module: the answer takes Opus, and the text is within the phone WER target") {
    if (!have_baresip()) return;
    if (std::system("test -f /usr/lib/baresip/modules/opus.so") != 0) {
      MESSAGE("SKIPPED: baresip has no opus module");
      return;
    }
    temp_dir tmp;
    sip_served s;
    const auto c = the_call(s, call_from_baresip(s, tmp, {"opus.so", "g711.so"}, {}, {}, "-r 48000 -c 2"));
    CHECK(c.end_reason == "hangup");
    CHECK(c.start.metadata["streams"][0]["codec"] == "opus");
    const auto text = finals_text(c);
    const double wer = word_error_rate(phone_recording_text(), text);
    MESSAGE("from baresip over Opus: \"" << text << "\", word error rate " << wer);
    CHECK(wer <= phone_wer_target);
  }

  TEST_CASE("baresip over TLS with SRTP (mediaenc=srtp-mand): answered RTP/SAVP with our key, the file's exact text") {
    if (!have_baresip_srtp()) return;
    temp_dir tmp;
    sip_served s(tls_config(tmp));
    const auto target = "sip:sluice@127.0.0.1:" + std::to_string(s.cfg.tls_port) + ";transport=tls";
    const auto r = call_from_baresip(s, tmp, {"g711.so", "srtp.so"}, target, tmp.file("sip.crt"), "-r 8000 -c 1",
                                     ";mediaenc=srtp-mand");
    // baresip (libre's own SRTP, not libsrtp) took our answer's key: the call was set up with
    // its media encryption, and it heard no SRTP failure of ours.
    CHECK(r.output.find("Using media encryption 'srtp-mand'") != std::string::npos);
    const auto c = the_call(s, r);
    CHECK(c.start.metadata["transport"] == "tls");
    CHECK(c.end_reason == "hangup");
    check_srtp_stream(c);
    const auto text = finals_text(c);
    MESSAGE("from baresip over SIP/TLS and SRTP: \"" << text << "\"");
    // Decrypted to the very mu-law bytes of the recording: the same text as the plain call.
    check_lossless_call_text(text);
  }

  TEST_CASE("SDES keys over plain SIP: refused 488 by default, taken with sip.srtp_plain_signalling") {
    if (!have_baresip_srtp()) return;
    {
      temp_dir tmp;
      sip_served s;
      const auto r = call_from_baresip(s, tmp, {"g711.so", "srtp.so"}, {}, {}, "-r 8000 -c 1", ";mediaenc=srtp-mand");
      INFO("baresip: " << r.output);
      CHECK(r.output.find("488") != std::string::npos);
      CHECK(r.output.find("Call established") == std::string::npos);
      CHECK(s.sip_calls().empty());
    }
    temp_dir tmp;
    config::sip_config cfg;
    cfg.srtp_plain_signalling = true;
    sip_served s(cfg);
    const auto r = call_from_baresip(s, tmp, {"g711.so", "srtp.so"}, {}, {}, "-r 8000 -c 1", ";mediaenc=srtp-mand");
    const auto c = the_call(s, r);
    CHECK(c.start.metadata["transport"] == "udp");
    check_srtp_stream(c);
    check_lossless_call_text(finals_text(c));
  }

  TEST_CASE("sip.srtp = require: a plain RTP call from baresip is refused 488, an SRTP one over TLS is taken") {
    if (!have_baresip_srtp()) return;
    temp_dir tmp;
    auto cfg = tls_config(tmp);
    cfg.srtp = "require";
    sip_served s(cfg);
    const auto target = "sip:sluice@127.0.0.1:" + std::to_string(s.cfg.tls_port) + ";transport=tls";
    {
      temp_dir plain_tmp;
      const auto r = call_from_baresip(s, plain_tmp, {"g711.so"}, target, tmp.file("sip.crt"));
      INFO("baresip: " << r.output);
      CHECK(r.output.find("488") != std::string::npos);
      CHECK(r.output.find("Call established") == std::string::npos);
      CHECK(s.sip_calls().empty());
    }
    const auto c = the_call(s, call_from_baresip(s, tmp, {"g711.so", "srtp.so"}, target, tmp.file("sip.crt"),
                                                 "-r 8000 -c 1", ";mediaenc=srtp-mand"));
    check_srtp_stream(c);
  }
}
