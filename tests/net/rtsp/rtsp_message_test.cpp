// The RTSP request parser, Transport header and SDP description alone: what a pusher or a
// hostile client sends, and the status each bad input must get.
#include <doctest/doctest.h>

#include <string>

#include "net/rtsp/rtsp_message.hpp"
#include "net/rtsp/rtsp_sdp.hpp"
#include "net/rtsp/rtsp_transport.hpp"

using namespace sluice::net::rtsp;

namespace {
parsed_frame req(const std::string& s, message_limits l = {}) {
  return parse_request(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()), l);
}
}  // namespace

TEST_SUITE("rtsp messages") {
  TEST_CASE("an ANNOUNCE with its SDP body is read whole, with CSeq and headers") {
    const std::string body = "v=0\r\nm=audio 0 RTP/AVP 0\r\n";
    const std::string s = "ANNOUNCE rtsp://127.0.0.1:8554/call1 RTSP/1.0\r\nCSeq: 2\r\nContent-Type: application/sdp\r\n"
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body + "OPTIONS";
    auto f = req(s);
    REQUIRE(f.kind == frame_kind::request);
    CHECK(f.request.method == "ANNOUNCE");
    CHECK(f.request.uri == "rtsp://127.0.0.1:8554/call1");
    CHECK(f.request.cseq == 2);
    CHECK(f.request.body == body);
    CHECK(f.consumed == s.size() - 7);
    CHECK(find_header(f.request.headers, "content-type") == std::optional<std::string>("application/sdp"));
  }

  TEST_CASE("a request cut anywhere before its end needs more bytes") {
    const std::string s = "SETUP rtsp://h/a RTSP/1.0\r\nCSeq: 3\r\nContent-Length: 4\r\n\r\nabcd";
    for (std::size_t n = 0; n < s.size(); ++n) CHECK(req(s.substr(0, n)).kind == frame_kind::need_more);
    CHECK(req(s).kind == frame_kind::request);
  }

  TEST_CASE("interleaved frames are read with their channel and payload") {
    const std::string s = std::string("$\x02\x00\x03", 4) + "xyzQ";
    auto f = req(s);
    REQUIRE(f.kind == frame_kind::interleaved);
    CHECK(f.channel == 2);
    CHECK(f.payload.size() == 3);
    CHECK(f.consumed == 7);
    CHECK(req(s.substr(0, 5)).kind == frame_kind::need_more);
  }

  TEST_CASE("hostile input gets its status: 413 for long headers or bodies, 505 for another version, 400 otherwise") {
    message_limits l;
    l.max_header_bytes = 100;
    l.max_body_bytes = 10;
    CHECK(req(std::string(101, 'A'), l).error_status == 413);  // no end of headers within the bound
    CHECK(req("OPTIONS * RTSP/1.0\r\nX: " + std::string(120, 'b') + "\r\n\r\n", l).error_status == 413);
    CHECK(req("ANNOUNCE x RTSP/1.0\r\nContent-Length: 11\r\n\r\n", l).error_status == 413);
    CHECK(req("ANNOUNCE x RTSP/1.0\r\nContent-Length: -1\r\n\r\n", l).error_status == 400);
    CHECK(req("ANNOUNCE x RTSP/1.0\r\nContent-Length: 99999999999999\r\n\r\n", l).error_status == 400);
    CHECK(req("OPTIONS * RTSP/2.0\r\nCSeq: 1\r\n\r\n").error_status == 505);
    CHECK(req("OPTIONS * HTTP/1.1\r\nCSeq: 1\r\n\r\n").error_status == 400);
    CHECK(req("OPTIONS\r\n\r\n").error_status == 400);
    CHECK(req("OPTIONS * RTSP/1.0\r\nno colon here\r\n\r\n").error_status == 400);
    CHECK(req(std::string("OPTIONS * RTSP/1.0\r\nX: a\x01z\r\n\r\n")).error_status == 400);
  }

  TEST_CASE("a missing or malformed CSeq reads as -1 (the session answers 400)") {
    CHECK(req("OPTIONS * RTSP/1.0\r\n\r\n").request.cseq == -1);
    CHECK(req("OPTIONS * RTSP/1.0\r\nCSeq: abc\r\n\r\n").request.cseq == -1);
    CHECK(req("OPTIONS * RTSP/1.0\r\nCSeq: 99999999999\r\n\r\n").request.cseq == -1);
    CHECK(req("OPTIONS * RTSP/1.0\r\nCSeq: 7\r\n\r\n").request.cseq == 7);
  }

  TEST_CASE("responses render with CSeq and Content-Length and parse back") {
    const auto r = render_response(461, 5, {{"Session", "abc"}}, "why\r\n");
    CHECK(r.rfind("RTSP/1.0 461 Unsupported Transport\r\nCSeq: 5\r\n", 0) == 0);
    auto f = parse_response(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(r.data()), r.size()), {});
    REQUIRE(f.kind == frame_kind::request);
    CHECK(f.response.status == 461);
    CHECK(f.response.cseq == 5);
    CHECK(f.response.body == "why\r\n");
  }
}

TEST_SUITE("rtsp transport") {
  TEST_CASE("TCP interleaved and UDP unicast are taken, multicast and other profiles are not") {
    auto t = choose_transport("RTP/AVP/TCP;unicast;interleaved=0-1;mode=record");
    REQUIRE(t);
    CHECK(t->tcp);
    CHECK(t->rtp_channel == 0);
    CHECK(t->record);
    auto u = choose_transport("RTP/AVP/UDP;unicast;client_port=5000-5001;mode=record");
    REQUIRE(u);
    CHECK_FALSE(u->tcp);
    CHECK(u->client_rtp_port == 5000);
    CHECK_FALSE(choose_transport("RTP/AVP;multicast;destination=224.1.1.1"));
    CHECK_FALSE(choose_transport("RAW/RAW/UDP;unicast;client_port=1-2"));
    CHECK_FALSE(choose_transport("RTP/AVP;unicast"));  // UDP without client_port
    // The first acceptable of a list is chosen.
    auto c = choose_transport("RTP/AVP;multicast, RTP/AVP/TCP;interleaved=4-5");
    REQUIRE(c);
    CHECK(c->rtp_channel == 4);
    u->server_rtp_port = 42000;
    CHECK(render_transport(*u) == "RTP/AVP/UDP;unicast;client_port=5000-5001;server_port=42000-42001;mode=record");
  }
}

TEST_SUITE("rtsp sdp") {
  TEST_CASE("ffmpeg's ANNOUNCE: PCMU with a relative control resolved against the URL") {
    const std::string sdp = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=No Name\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
                            "a=tool:libavformat\r\nm=audio 0 RTP/AVP 0\r\nb=AS:64\r\na=control:streamid=0\r\n";
    auto d = parse_description(sdp, "rtsp://127.0.0.1:8554/call1", 4);
    REQUIRE(d);
    REQUIRE(d->media.size() == 1);
    CHECK(d->media[0].taken);
    CHECK(d->media[0].codec == rtsp_codec::pcmu);
    CHECK(d->media[0].control == "rtsp://127.0.0.1:8554/call1/streamid=0");
    CHECK(url_path("rtsp://127.0.0.1:8554/call1?x=1") == "/call1");
  }

  TEST_CASE("L16 stereo at 16 kHz and G.722 are taken with their rates, video is listed and left") {
    const std::string sdp = "v=0\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=control:trackID=0\r\n"
                            "m=audio 0 RTP/AVP 97\r\na=rtpmap:97 L16/16000/2\r\na=control:trackID=1\r\n"
                            "m=audio 0 RTP/AVP 9\r\na=control:rtsp://other/abs\r\n";
    auto d = parse_description(sdp, "rtsp://h/s/", 4);
    REQUIRE(d);
    REQUIRE(d->media.size() == 3);
    CHECK_FALSE(d->media[0].taken);
    CHECK(d->media[1].codec == rtsp_codec::l16);
    CHECK(d->media[1].sample_rate == 16000);
    CHECK(d->media[1].channels == 2);
    CHECK(d->media[1].control == "rtsp://h/s/trackID=1");
    CHECK(d->media[2].codec == rtsp_codec::g722);
    CHECK(d->media[2].sample_rate == 16000);
    CHECK(d->media[2].clock_rate == 8000);
    CHECK(d->media[2].control == "rtsp://other/abs");
  }

  TEST_CASE("ffmpeg's ANNOUNCE of libopus: opus/48000/2 on its 48 kHz clock, decoded at 16 kHz") {
    // What ffmpeg 5.1 sends for `-c:a libopus -f rtsp` (its sdp.c writes opus/48000/2, RFC 7587).
    const std::string sdp = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=No Name\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
                            "a=tool:libavformat\r\nm=audio 0 RTP/AVP 97\r\nb=AS:32\r\n"
                            "a=rtpmap:97 opus/48000/2\r\na=fmtp:97 sprop-stereo=0\r\na=control:streamid=0\r\n";
    auto d = parse_description(sdp, "rtsp://127.0.0.1:8554/o", 4);
    REQUIRE(d);
    REQUIRE(d->media.size() == 1);
    CHECK(d->media[0].taken);
    CHECK(d->media[0].codec == rtsp_codec::opus);
    CHECK(d->media[0].payload_type == 97);
    CHECK(d->media[0].clock_rate == 48000);
    CHECK(d->media[0].sample_rate == 16000);
    CHECK(std::string(codec_name(d->media[0].codec)) == "opus");
    const auto c = sip_codec_of(d->media[0]);
    CHECK(c.codec == sluice::net::sip::audio_codec::opus);
    CHECK(c.clock_rate == 48000);
    CHECK(c.sample_rate == 16000);
  }

  TEST_CASE("no usable audio, too many media or not SDP are errors") {
    CHECK(parse_description("v=0\r\nm=audio 0 RTP/AVP 96\r\na=rtpmap:96 speex/16000\r\n", "rtsp://h/a", 4).error().code ==
          sluice::errc::unsupported);
    // Opus at any clock but RFC 7587's 48000 is not Opus over RTP.
    CHECK(parse_description("v=0\r\nm=audio 0 RTP/AVP 96\r\na=rtpmap:96 opus/16000/1\r\n", "rtsp://h/a", 4).error().code ==
          sluice::errc::unsupported);
    CHECK(parse_description("hello", "rtsp://h/a", 4).error().code == sluice::errc::corrupt);
    std::string many = "v=0\r\n";
    for (int i = 0; i < 5; ++i) many += "m=audio 0 RTP/AVP 0\r\n";
    CHECK(parse_description(many, "rtsp://h/a", 4).error().code == sluice::errc::limit_exceeded);
  }
}
