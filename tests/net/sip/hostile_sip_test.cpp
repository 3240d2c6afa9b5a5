// Hostile and malformed SIP over UDP, sent raw: each gets the status RFC 3261 names (or is
// dropped), and the service answers a well-formed OPTIONS afterwards, so none of it crashed it.
#include "tests/net/sip/sip_test_util.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {
std::string invite(const std::string& call_id, const std::string& extra_headers, const std::string& body,
                   const std::string& content_type = "application/sdp") {
  std::string m = "INVITE sip:sluice@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:@LPORT@;branch=z9hG4bK" + call_id +
                  "\r\nFrom: <sip:evil@127.0.0.1>;tag=x1\r\nTo: <sip:sluice@127.0.0.1>\r\nCall-ID: " + call_id +
                  "\r\nCSeq: 1 INVITE\r\nContact: <sip:evil@127.0.0.1:@LPORT@>\r\n" + extra_headers;
  if (!body.empty()) m += "Content-Type: " + content_type + "\r\n";
  m += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return m;
}

std::string options(const std::string& call_id) {
  return "OPTIONS sip:sluice@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:@LPORT@;branch=z9hG4bK" + call_id +
         "\r\nFrom: <sip:t@127.0.0.1>;tag=1\r\nTo: <sip:sluice@127.0.0.1>\r\nCall-ID: " + call_id +
         "\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n";
}

const std::string g729_only =
    "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 7000 RTP/AVP 18\r\n"
    "a=rtpmap:18 G729/8000\r\n";
}  // namespace

TEST_SUITE("sip hostile input") {
  TEST_CASE("malformed and unacceptable requests get their status; the service stays up") {
    sip_served s;
    CHECK(sip_udp_request(s.cfg.port, options("o1")) == "SIP/2.0 200 OK");

    SUBCASE("an offer without a codec we take: 488") {
      CHECK(sip_udp_request(s.cfg.port, invite("c1", "Max-Forwards: 70\r\n", g729_only)).rfind("SIP/2.0 488", 0) == 0);
    }
    SUBCASE("an INVITE without an offer: 488") {
      CHECK(sip_udp_request(s.cfg.port, invite("c2", "Max-Forwards: 70\r\n", "")).rfind("SIP/2.0 488", 0) == 0);
    }
    SUBCASE("a body that is not SDP, labelled SDP: 488") {
      CHECK(sip_udp_request(s.cfg.port, invite("c3", "Max-Forwards: 70\r\n", "\x01\x02garbage\r\nm=\r\n"))
                .rfind("SIP/2.0 488", 0) == 0);
    }
    SUBCASE("a body of another type: 415") {
      CHECK(sip_udp_request(s.cfg.port, invite("c4", "Max-Forwards: 70\r\n", "<xml/>", "application/xml"))
                .rfind("SIP/2.0 415", 0) == 0);
    }
    SUBCASE("Max-Forwards 0 at its destination is handled like any request (RFC 3261 16.3 is for proxies)") {
      CHECK(sip_udp_request(s.cfg.port, invite("c5", "Max-Forwards: 0\r\n", g729_only)).rfind("SIP/2.0 488", 0) == 0);
    }
    SUBCASE("garbage datagrams and a truncated request are dropped or refused, never fatal") {
      for (const std::string& junk : {std::string("\x00\x01\x02", 3), std::string(1400, 'A'),
                                     std::string("INVITE sip:x SIP/2.0\r\nVia: broken\r\n\r\n"),
                                     std::string("SIP/2.0 200 OK\r\n\r\n")}) {
        const auto reply = sip_udp_request(s.cfg.port, junk, std::chrono::milliseconds(300));
        CHECK((reply.empty() || reply.rfind("SIP/2.0 4", 0) == 0));
      }
    }
    CHECK(sip_udp_request(s.cfg.port, options("o2")) == "SIP/2.0 200 OK");
    CHECK(s.sip->live_calls() == 0);
    CHECK(s.sip_calls().empty());  // nothing refused was registered as a call
  }

  TEST_CASE("no free RTP port: 503 with Retry-After, and nothing registered") {
    config::sip_config cfg;
    cfg.rtp_port_min = free_rtp_base(2);
    cfg.rtp_port_max = cfg.rtp_port_min + 1;  // room for exactly one stream
    sip_served s(cfg);
    // Hold the only port with a socket of our own: the pool finds it taken.
    asio::io_context ioc;
    asio::ip::udp::socket holder(ioc, asio::ip::udp::endpoint(asio::ip::make_address("127.0.0.1"), cfg.rtp_port_min));
    const std::string pcmu =
        "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 7000 RTP/AVP 0\r\n";
    std::string whole;
    const auto status = sip_udp_request(s.cfg.port, invite("p1", "Max-Forwards: 70\r\n", pcmu),
                                        std::chrono::milliseconds(3000), &whole);
    CHECK(status.rfind("SIP/2.0 503", 0) == 0);
    CHECK(whole.find("Retry-After: 5") != std::string::npos);
    CHECK(s.sip_calls().empty());
  }
}
