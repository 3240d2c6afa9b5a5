// Opus over RTP (RFC 7587) in a SIP call. SIPp places the call offering opus/48000/2 and checks
// that the answer takes it; the test is the media peer: it encodes the committed phone recording
// with libopus itself (20 ms frames, RTP timestamps on the 48 kHz clock) and sends the packets
// paced as a live stream. The text is judged by the phone-speech WER target of the other SIP
// tests against the recording's true transcript.
#include <opus/opus.h>

#include <future>

#include "tests/common/phone_recording.hpp"
#include "tests/net/sip/sip_test_util.hpp"

using namespace sluice;
using namespace sluice::test;
using udp = boost::asio::ip::udp;

namespace {
constexpr int input_hz = 8000;
constexpr int frame_samples = 160;   // 20 ms at 8 kHz
constexpr uint32_t ts_per_frame = 960;  // 20 ms on Opus's 48 kHz RTP clock
constexpr uint8_t opus_pt = 111;
constexpr int bitrate = 24000;
}  // namespace

TEST_SUITE("sip opus") {
  TEST_CASE("an Opus RTP stream encoded by libopus in the test gives the recording's text") {
    temp_dir tmp;
    // The recording as 16-bit PCM (sox decodes the mu-law WAV).
    const auto raw = tmp.file("call.raw");
    REQUIRE(sox(phone_recording + " -t raw -e signed -b 16 -c 1 " + raw));
    const auto bytes = read_bytes(raw);
    std::vector<int16_t> pcm(bytes.size() / 2);
    for (std::size_t i = 0; i < pcm.size(); ++i)
      pcm[i] = static_cast<int16_t>(bytes[2 * i] | bytes[2 * i + 1] << 8);
    REQUIRE(pcm.size() > static_cast<std::size_t>(input_hz));
    int err = 0;
    OpusEncoder* enc = opus_encoder_create(input_hz, 1, OPUS_APPLICATION_VOIP, &err);
    REQUIRE(err == OPUS_OK);
    opus_encoder_ctl(enc, OPUS_SET_BITRATE(bitrate));
    std::vector<std::vector<uint8_t>> packets;
    for (std::size_t off = 0; off + frame_samples <= pcm.size(); off += frame_samples) {
      std::vector<uint8_t> out(1500);
      const int n = opus_encode(enc, pcm.data() + off, frame_samples, out.data(), static_cast<opus_int32>(out.size()));
      REQUIRE(n > 0);
      out.resize(static_cast<std::size_t>(n));
      packets.push_back(std::move(out));
    }
    opus_encoder_destroy(enc);

    config::sip_config cfg;
    cfg.rtp_port_min = free_rtp_base(4);
    cfg.rtp_port_max = cfg.rtp_port_min + 1;  // one stream: the test knows the service's port
    sip_served s(cfg);
    boost::asio::io_context ioc;
    const auto lo = boost::asio::ip::make_address("127.0.0.1");
    udp::socket sock(ioc, udp::endpoint(lo, static_cast<uint16_t>(cfg.rtp_port_min + 2)));
    const udp::endpoint service(lo, static_cast<uint16_t>(cfg.rtp_port_min));
    const int call_ms = static_cast<int>(packets.size()) * 20 + 2000;
    auto sipp = std::async(std::launch::async, [&] {
      return run_sipp(s, tmp, "uac_media_peer.xml",
                      {{"@RTP_PORT@", std::to_string(cfg.rtp_port_min + 2)}, {"@PT@", std::to_string(opus_pt)},
                       {"@RTPMAP@", "opus/48000/2"}, {"@SDP_EXTRA@", ""},
                       {"@ANSWER_HAS@", "a=rtpmap:111 opus/48000/2"}, {"@PAUSE_MS@", std::to_string(call_ms)}},
                      "-m 1");
    });
    if (!s.wait_for([&] { return s.sip_calls().size() == 1; })) FAIL("no call: " << sipp.get().output);
    for (std::size_t i = 0; i < packets.size(); ++i) {
      std::vector<uint8_t> d(12);
      const auto seq = static_cast<uint16_t>(i);
      const auto ts = static_cast<uint32_t>(i * ts_per_frame);
      d[0] = 0x80;
      d[1] = static_cast<uint8_t>((i == 0 ? 0x80 : 0) | opus_pt);
      d[2] = static_cast<uint8_t>(seq >> 8);
      d[3] = static_cast<uint8_t>(seq);
      for (int k = 0; k < 4; ++k) d[4 + k] = static_cast<uint8_t>(ts >> (24 - 8 * k));
      d[8] = 0x0f;
      d.insert(d.end(), packets[i].begin(), packets[i].end());
      sock.send_to(boost::asio::buffer(d), service);
      // Pacing of the traffic, not synchronisation: a live stream sends every 20 ms.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const auto r = sipp.get();
    INFO(r.output);
    REQUIRE(r.status == 0);  // the answer took opus/48000/2
    const auto c = s.ended_call();
    CHECK(c.start.metadata["streams"][0]["codec"] == "opus");
    const auto& rtp = c.start.metadata["rtp"][0];
    MESSAGE("rtp: " << rtp.dump());
    CHECK(rtp["datagrams"].get<std::size_t>() == packets.size());
    CHECK(rtp["not_rtp"].get<int>() == 0);
    const auto text = finals_text(c);
    const double wer = word_error_rate(phone_recording_text(), text);
    MESSAGE("over Opus/RTP: \"" << text << "\", word error rate " << wer);
    CHECK(wer <= phone_wer_target);
  }
}
