// SDP offers as phones, PBXs and SIPp send them, and the answers sluice gives: which stream and
// codec are taken, what the answer says (checked line by line), and errors for offers sluice
// cannot take or cannot read.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "net/sip/sdp_offer.hpp"

using namespace sluice;
using namespace sluice::net::sip;

namespace {
bool has_line(const std::string& sdp, const std::string& line) { return sdp.find(line + "\r\n") != std::string::npos; }

const char* sipp_offer =
    "v=0\r\no=user1 53655765 2353687637 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
    "m=audio 6000 RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-15\r\n";
}  // namespace

TEST_SUITE("sip sdp offer") {
  TEST_CASE("a PCMU offer with telephone-event is taken and answered recvonly on our port") {
    auto o = parse_offer(sipp_offer, 8);
    REQUIRE_MESSAGE(o.has_value(), (o ? std::string() : o.error().message));
    REQUIRE(o->streams.size() == 1);
    const auto& s = o->streams[0];
    CHECK(s.accepted);
    CHECK(s.codec.codec == audio_codec::pcmu);
    CHECK(s.codec.payload_type == 0);
    CHECK(s.telephone_event_pt == 101);
    CHECK(s.remote_address == "127.0.0.1");
    CHECK(s.remote_port == 6000);
    const std::vector<uint16_t> ports{40002};
    auto a = render_answer(*o, "127.0.0.1", ports, 42, 1);
    CHECK(a.rfind("v=0\r\n", 0) == 0);
    CHECK(has_line(a, "o=sluice 42 1 IN IP4 127.0.0.1"));
    CHECK(has_line(a, "c=IN IP4 127.0.0.1"));
    CHECK(has_line(a, "m=audio 40002 RTP/AVP 0 101"));
    CHECK(has_line(a, "a=rtpmap:0 PCMU/8000"));
    CHECK(has_line(a, "a=rtpmap:101 telephone-event/8000"));
    CHECK(has_line(a, "a=recvonly"));
  }

  TEST_CASE("the best codec for recognition is chosen whatever the offer's order") {
    auto o = parse_offer(
        "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\n"
        "m=audio 7000 RTP/AVP 8 0 9 18\r\na=rtpmap:8 PCMA/8000\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:9 G722/8000\r\n"
        "a=rtpmap:18 G729/8000\r\n",
        8);
    REQUIRE_MESSAGE(o.has_value(), (o ? std::string() : o.error().message));
    CHECK(o->streams[0].codec.codec == audio_codec::g722);
    CHECK(o->streams[0].codec.sample_rate == 16000);
    CHECK(o->streams[0].codec.clock_rate == 8000);
    auto pcma = parse_offer(
        "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\nm=audio 7000 RTP/AVP 18 8\r\n"
        "a=rtpmap:18 G729/8000\r\na=rtpmap:8 PCMA/8000\r\n",
        8);
    REQUIRE(pcma.has_value());
    CHECK(pcma->streams[0].codec.codec == audio_codec::pcma);
    CHECK(pcma->streams[0].telephone_event_pt == -1);
  }

  TEST_CASE("a video line is refused with port 0 and kept in place, a sendonly stream stays recvonly") {
    auto o = parse_offer(
        "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\n"
        "m=video 9000 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\n"
        "m=audio 7000 RTP/AVP 0\r\na=sendonly\r\na=label:1\r\n",
        8);
    REQUIRE_MESSAGE(o.has_value(), (o ? std::string() : o.error().message));
    REQUIRE(o->streams.size() == 2);
    CHECK_FALSE(o->streams[0].accepted);
    CHECK(o->streams[1].accepted);
    CHECK(o->streams[1].label == "1");
    CHECK(o->accepted() == 1);
    const std::vector<uint16_t> ports{40010};
    auto a = render_answer(*o, "127.0.0.1", ports, 1, 2);
    const auto video = a.find("m=video 0 RTP/AVP 96\r\n");
    const auto audio = a.find("m=audio 40010 RTP/AVP 0\r\n");
    CHECK(video != std::string::npos);
    CHECK(audio != std::string::npos);
    CHECK(video < audio);
    CHECK(has_line(a, "a=label:1"));
    CHECK(has_line(a, "a=recvonly"));
  }

  TEST_CASE("offers sluice cannot take or read are errors that say why") {
    auto none = parse_offer(
        "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\nm=audio 7000 RTP/AVP 18\r\n"
        "a=rtpmap:18 G729/8000\r\n",
        8);
    REQUIRE_FALSE(none.has_value());
    CHECK(none.error().code == errc::unsupported);
    auto srtp = parse_offer(
        "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\nm=audio 7000 RTP/SAVP 0\r\n", 8);
    REQUIRE_FALSE(srtp.has_value());
    CHECK(srtp.error().code == errc::unsupported);
    auto garbage = parse_offer("hello\r\nthis is not sdp\r\n", 8);
    REQUIRE_FALSE(garbage.has_value());
    CHECK(garbage.error().code == errc::corrupt);
    CHECK(parse_offer("", 8).error().code == errc::corrupt);
    CHECK(parse_offer(std::string("v=0\r\n\0", 6), 8).error().code == errc::corrupt);
    std::string many = "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\n";
    for (int i = 0; i < 9; ++i) many += "m=audio " + std::to_string(7000 + 2 * i) + " RTP/AVP 0\r\n";
    CHECK(parse_offer(many, 8).error().code == errc::limit_exceeded);
    auto no_conn = parse_offer("v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 7000 RTP/AVP 0\r\n", 8);
    CHECK_FALSE(no_conn.has_value());  // no c= anywhere: nowhere the audio comes from
  }

  TEST_CASE("m= lines that make sofia-sip 1.12.11's parser allocate until memory runs out are refused before it") {
    // Found by tests/fuzz/sdp_offer_fuzz.cpp; each of these passed to sdp_parse alone exhausts
    // memory (checked under `ulimit -v`).
    const std::string head = "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\n";
    for (const std::string& m : {std::string("m=audio 7002 X 0 ;"), std::string("m=audio 7002 RT0PVA /P"),
                                std::string("m=video 9000 R\xff\xff\xff\xf4" "AVP 96")}) {
      CAPTURE(m);
      auto r = parse_offer(head + m + "\r\n", 8);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().code == errc::corrupt);
    }
    // The same line behind a leading space or tab: sofia skips the white space and loops as
    // before (found by the fuzzer in CI), so a line not of the form <letter>=<value> is refused.
    for (const std::string& m : {std::string(" m=video 9000 P4 =0"), std::string("\tm=audio 7002 X 0 ;"),
                                std::string("M=audio 7000 RTP/AVP 0"), std::string("m =audio 7000 RTP/AVP 0")}) {
      CAPTURE(m);
      auto r = parse_offer(head + m + "\r\n", 8);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().code == errc::corrupt);
      CHECK(r.error().message.find("line 6") != std::string::npos);
    }
    // UTF-8 in the session name is allowed (RFC 4566 5.3), and the offer is still taken.
    auto utf8 = parse_offer(std::string("v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=caf\xc3\xa9\r\nc=IN IP4 10.0.0.1\r\n") +
                                "t=0 0\r\nm=audio 7000 RTP/AVP 0\r\n",
                            8);
    CHECK_MESSAGE(utf8.has_value(), (utf8 ? "" : utf8.error().message));
  }
}

TEST_SUITE("sip sdp offer: opus, comfort noise, rtcp") {
  TEST_CASE("opus/48000/2 is preferred over PCMU, answered with its 48 kHz clock and 2 channels, without 8 kHz events") {
    const std::string offer =
        "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
        "m=audio 7000 RTP/AVP 0 111 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:111 opus/48000/2\r\n"
        "a=rtpmap:101 telephone-event/8000\r\n";
    auto o = parse_offer(offer, 8);
    REQUIRE(o.has_value());
    const auto& s = o->streams[0];
    CHECK(s.codec.codec == audio_codec::opus);
    CHECK(s.codec.payload_type == 111);
    CHECK(s.codec.clock_rate == 48000);
    CHECK(s.codec.sample_rate == 16000);
    CHECK(s.telephone_event_pt == -1);  // an 8 kHz event clock cannot pair with Opus's 48 kHz
    const std::vector<uint16_t> ports{40002};
    auto a = render_answer(*o, "127.0.0.1", ports, 1, 1);
    CHECK(has_line(a, "m=audio 40002 RTP/AVP 111"));
    CHECK(has_line(a, "a=rtpmap:111 opus/48000/2"));
  }

  TEST_CASE("CN/8000 is answered with a PCMU stream, a=rtcp-mux is echoed, a=rtcp gives the RTCP port") {
    const std::string offer =
        "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
        "m=audio 7000 RTP/AVP 0 13\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:13 CN/8000\r\na=rtcp:7005\r\na=rtcp-mux\r\n";
    auto o = parse_offer(offer, 8);
    REQUIRE(o.has_value());
    const auto& s = o->streams[0];
    CHECK(s.codec.comfort_noise_pt == 13);
    CHECK(s.rtcp_mux);
    CHECK(s.rtcp_port == 7005);
    const std::vector<uint16_t> ports{40002};
    auto a = render_answer(*o, "127.0.0.1", ports, 1, 1);
    CHECK(has_line(a, "m=audio 40002 RTP/AVP 0 13"));
    CHECK(has_line(a, "a=rtpmap:13 CN/8000"));
    CHECK(has_line(a, "a=rtcp-mux"));
    // Without CN or rtcp-mux in the offer, neither is in the answer.
    auto plain = parse_offer(std::string(sipp_offer), 8);
    REQUIRE(plain.has_value());
    auto b = render_answer(*plain, "127.0.0.1", ports, 1, 1);
    CHECK(b.find("CN/8000") == std::string::npos);
    CHECK(b.find("rtcp-mux") == std::string::npos);
  }
}

// SRTP with SDES keys (RFC 4568). Expected key bytes were decoded by Python's base64 module, not
// by the code under test.
namespace {
const char* savp_offer(const std::string& crypto_lines, const std::string& proto = "RTP/SAVP") {
  static std::string s;
  s = "v=0\r\no=- 1 1 IN IP4 192.0.2.2\r\ns=-\r\nc=IN IP4 192.0.2.2\r\nt=0 0\r\nm=audio 47208 " + proto +
      " 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\na=sendrecv\r\n" + crypto_lines;
  return s.c_str();
}
std::string hex(const std::vector<uint8_t>& b) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (auto v : b) {
    out += d[v >> 4];
    out += d[v & 15];
  }
  return out;
}
// The a=crypto line of an answer, or "".
std::string crypto_line(const std::string& sdp) {
  const auto p = sdp.find("a=crypto:");
  if (p == std::string::npos) return {};
  return sdp.substr(p + 9, sdp.find("\r\n", p) - p - 9);
}
}  // namespace

TEST_SUITE("sip sdp srtp") {
  TEST_CASE("RFC 4568's example a=crypto line: tag, suite and the 30-byte key and salt, and its MKI is refused") {
    // RFC 4568 9.1's example carries an MKI (|1:32), which sluice does not take.
    auto mki = parse_crypto("1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR|2^20|1:32");
    REQUIRE_FALSE(mki.has_value());
    CHECK(mki.error().code == errc::unsupported);
    CHECK(mki.error().message.find("MKI") != std::string::npos);
    auto c = parse_crypto("1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR|2^20");
    REQUIRE_MESSAGE(c.has_value(), (c ? std::string() : c.error().message));
    CHECK(c->tag == 1);
    CHECK(c->suite == srtp_suite::aes_cm_128_hmac_sha1_80);
    CHECK(hex(c->key) == "3d2d6e40255e7821426a75667239293f2c2335685c603d265d7b71695051");
    CHECK(render_crypto(*c) == "1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR");
  }

  TEST_CASE("each suite wants its own key length: 46 bytes for AES_256_CM, 28 for AEAD_AES_128_GCM") {
    // bytes 0..45 and 100..127, base64 by Python.
    auto a256 = parse_crypto("7 AES_256_CM_HMAC_SHA1_32 inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLQ==");
    REQUIRE_MESSAGE(a256.has_value(), (a256 ? std::string() : a256.error().message));
    CHECK(a256->tag == 7);
    CHECK(a256->suite == srtp_suite::aes_256_cm_hmac_sha1_32);
    REQUIRE(a256->key.size() == 46);
    CHECK(a256->key[45] == 45);
    // Without its padding (some peers leave it out): the same key.
    auto unpadded = parse_crypto("7 AES_256_CM_HMAC_SHA1_32 inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLQ");
    REQUIRE(unpadded.has_value());
    CHECK(unpadded->key == a256->key);
    auto gcm = parse_crypto("2 AEAD_AES_128_GCM inline:ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+fw==");
    REQUIRE_MESSAGE(gcm.has_value(), (gcm ? std::string() : gcm.error().message));
    CHECK(gcm->key.size() == 28);
    CHECK(gcm->key[0] == 100);
    // A 30-byte key under a 46-byte suite, and the reverse.
    auto short_key = parse_crypto("1 AES_256_CM_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR");
    REQUIRE_FALSE(short_key.has_value());
    CHECK(short_key.error().code == errc::corrupt);
    CHECK(short_key.error().message.find("46-byte") != std::string::npos);
    CHECK_FALSE(parse_crypto("1 AEAD_AES_128_GCM inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR").has_value());
  }

  TEST_CASE("malformed and unsupported a=crypto values are errors, never crashes") {
    const char* corrupt[] = {"", "1", "1 AES_CM_128_HMAC_SHA1_80", "x AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR",
                             "1234567890 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR",
                             "1 AES_CM_128_HMAC_SHA1_80 uri:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR",
                             "1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtx*VBR",
                             "1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR|forever",
                             "1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR|2^20|2^20|2^20"};
    auto refused_as = [](const char* v, errc code) {
      auto r = parse_crypto(v);
      CHECK_MESSAGE(!r.has_value(), v);
      if (!r) CHECK_MESSAGE(r.error().code == code, v);
    };
    for (const char* v : corrupt) refused_as(v, errc::corrupt);
    const char* unsupported[] = {
        "1 F8_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR",
        "1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR UNENCRYPTED_SRTP",
        "1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR;inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR"};
    for (const char* v : unsupported) refused_as(v, errc::unsupported);
    // The window size hint is only a hint: taken.
    CHECK(parse_crypto("1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR WSH=128").has_value());
  }

  TEST_CASE("baresip's RTP/SAVP offer is taken with its crypto line, and answered RTP/SAVP with the same tag and a key of ours") {
    // The offer baresip 1.0 sends with mediaenc=srtp-mand (captured from it).
    auto o = parse_offer(savp_offer("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:Uqmtvvj9ffs6aKR4wR09D6tMaN8eAZaY95BdkPF+\r\n"), 8);
    REQUIRE_MESSAGE(o.has_value(), (o ? std::string() : o.error().message));
    auto& s = o->streams[0];
    CHECK(s.accepted);
    CHECK(s.secure);
    CHECK(s.proto == "RTP/SAVP");
    CHECK(hex(s.remote_crypto.key) == "52a9adbef8fd7dfb3a68a478c11d3d0fab4c68df1e019698f7905d90f17e");
    // Without our key the stream cannot be answered.
    const std::vector<uint16_t> ports{40002};
    CHECK(has_line(render_answer(*o, "127.0.0.1", ports, 1, 1), "m=audio 0 RTP/SAVP 0"));
    REQUIRE(choose_local_keys(*o).has_value());
    CHECK(s.local_crypto.tag == 1);
    CHECK(s.local_crypto.key.size() == 30);
    CHECK(s.local_crypto.key != s.remote_crypto.key);
    const auto a = render_answer(*o, "127.0.0.1", ports, 1, 1);
    CHECK(has_line(a, "m=audio 40002 RTP/SAVP 0 101"));
    auto ours = parse_crypto(crypto_line(a));
    REQUIRE(ours.has_value());
    CHECK(ours->tag == 1);
    CHECK(ours->suite == srtp_suite::aes_cm_128_hmac_sha1_80);
    CHECK(ours->key == s.local_crypto.key);
    // Two answers' keys differ (drawn from the random generator, not derived from the offer).
    auto again = parse_offer(savp_offer("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:Uqmtvvj9ffs6aKR4wR09D6tMaN8eAZaY95BdkPF+\r\n"), 8);
    REQUIRE(choose_local_keys(*again).has_value());
    CHECK(again->streams[0].local_crypto.key != s.local_crypto.key);
    // A re-offer with the same suite keeps our key; another suite gets a new one of its length.
    auto re = parse_offer(savp_offer("a=crypto:3 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR\r\n"), 8);
    REQUIRE(choose_local_keys(*re, &*o).has_value());
    CHECK(re->streams[0].local_crypto.key == s.local_crypto.key);
    CHECK(re->streams[0].local_crypto.tag == 3);
    auto re256 = parse_offer(
        savp_offer("a=crypto:4 AES_256_CM_HMAC_SHA1_80 inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLQ==\r\n"), 8);
    REQUIRE(choose_local_keys(*re256, &*o).has_value());
    CHECK(re256->streams[0].local_crypto.key.size() == 46);
  }

  TEST_CASE("the first crypto line sluice takes wins, in the offer's order") {
    auto o = parse_offer(savp_offer("a=crypto:1 F8_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR\r\n"
                                    "a=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR\r\n"
                                    "a=crypto:3 AES_CM_128_HMAC_SHA1_80 inline:Uqmtvvj9ffs6aKR4wR09D6tMaN8eAZaY95BdkPF+\r\n"),
                         8);
    REQUIRE(o.has_value());
    CHECK(o->streams[0].remote_crypto.tag == 2);
    CHECK(o->streams[0].remote_crypto.suite == srtp_suite::aes_cm_128_hmac_sha1_32);
  }

  TEST_CASE("policy: off refuses RTP/SAVP, require refuses plain RTP, keys over plain SIP are refused or ignored") {
    const std::string line = "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:Uqmtvvj9ffs6aKR4wR09D6tMaN8eAZaY95BdkPF+\r\n";
    auto off = parse_offer(savp_offer(line), 8, {srtp_mode::off, true});
    REQUIRE_FALSE(off.has_value());
    CHECK(off.error().code == errc::unsupported);
    CHECK(off.error().message.find("sip.srtp = \"off\"") != std::string::npos);
    // a=crypto on RTP/AVP (best-effort SRTP): taken encrypted when allowed, plain when off.
    auto best = parse_offer(savp_offer(line, "RTP/AVP"), 8, {srtp_mode::allow, true});
    REQUIRE(best.has_value());
    CHECK(best->streams[0].secure);
    REQUIRE(choose_local_keys(*best).has_value());
    const std::vector<uint16_t> ports{40002};
    auto a = render_answer(*best, "127.0.0.1", ports, 1, 1);
    CHECK(has_line(a, "m=audio 40002 RTP/AVP 0 101"));
    CHECK_FALSE(crypto_line(a).empty());
    auto plain = parse_offer(savp_offer(line, "RTP/AVP"), 8, {srtp_mode::off, true});
    REQUIRE(plain.has_value());
    CHECK_FALSE(plain->streams[0].secure);
    CHECK(crypto_line(render_answer(*plain, "127.0.0.1", ports, 1, 1)).empty());
    // require: plain RTP is refused, SRTP taken.
    auto req_plain = parse_offer(sipp_offer, 8, {srtp_mode::require, true});
    REQUIRE_FALSE(req_plain.has_value());
    CHECK(req_plain.error().message.find("require") != std::string::npos);
    CHECK(parse_offer(savp_offer(line), 8, {srtp_mode::require, true}).has_value());
    // Keys over SIP that is not TLS: RTP/SAVP refused naming the key to set, a=crypto on
    // RTP/AVP answered as plain RTP, and require refuses everything.
    auto clear = parse_offer(savp_offer(line), 8, {srtp_mode::allow, false});
    REQUIRE_FALSE(clear.has_value());
    CHECK(clear.error().message.find("sip.srtp_plain_signalling") != std::string::npos);
    auto clear_avp = parse_offer(savp_offer(line, "RTP/AVP"), 8, {srtp_mode::allow, false});
    REQUIRE(clear_avp.has_value());
    CHECK_FALSE(clear_avp->streams[0].secure);
    CHECK_FALSE(parse_offer(savp_offer(line, "RTP/AVP"), 8, {srtp_mode::require, false}).has_value());
    // RTP/SAVP with no crypto line sluice takes.
    auto none = parse_offer(savp_offer("a=crypto:1 F8_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR\r\n"), 8);
    REQUIRE_FALSE(none.has_value());
    CHECK(none.error().message.find("a=crypto") != std::string::npos);
    CHECK(none.error().message.find("F8_128_HMAC_SHA1_80") != std::string::npos);
  }
}
