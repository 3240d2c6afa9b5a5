// Hostile and malformed SIP over UDP, sent raw: each gets the status RFC 3261 names (or is
// dropped), and the service answers a well-formed OPTIONS afterwards, so none of it crashed it.
#include "tests/net/sip/sip_test_util.hpp"
#include "tests/net/prometheus_samples.hpp"

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
// A call placed by hand over raw UDP (INVITE offering PCMU, ACK, later BYE), so that its RTP
// can be anything: `media` is the socket the offer names, `rtp_ep` the port of sluice's answer.
struct raw_call {
  asio::io_context ioc;
  const asio::ip::address lo = asio::ip::make_address("127.0.0.1");
  asio::ip::udp::socket sig{ioc, asio::ip::udp::endpoint(lo, 0)}, media{ioc, asio::ip::udp::endpoint(lo, 0)};
  asio::ip::udp::endpoint sip_ep, rtp_ep;
  std::string lport, dialog, to_line;

  raw_call(uint16_t sip_port, const std::string& call_id) : sip_ep(lo, sip_port) {
    timeval tv{3, 0};
    ::setsockopt(sig.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    lport = std::to_string(sig.local_endpoint().port());
    const std::string sdp = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio " +
                            std::to_string(media.local_endpoint().port()) + " RTP/AVP 0\r\n";
    dialog = "From: <sip:evil@127.0.0.1>;tag=x1\r\nCall-ID: " + call_id + "\r\n";
    sig.send_to(asio::buffer("INVITE sip:sluice@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:" + lport +
                             ";branch=z9hG4bKinv1\r\n" + dialog + "To: <sip:sluice@127.0.0.1>\r\nCSeq: 1 INVITE\r\n" +
                             "Contact: <sip:evil@127.0.0.1:" + lport + ">\r\nMax-Forwards: 70\r\n" +
                             "Content-Type: application/sdp\r\nContent-Length: " + std::to_string(sdp.size()) +
                             "\r\n\r\n" + sdp),
                sip_ep);
    // The 200 OK: the dialog's To tag and the RTP port of the answer.
    std::string ok;
    for (int i = 0; i < 10 && ok.rfind("SIP/2.0 200", 0) != 0; ++i) {
      std::vector<char> buf(65536);
      const auto n = ::recv(sig.native_handle(), buf.data(), buf.size(), 0);
      REQUIRE(n > 0);
      ok.assign(buf.data(), static_cast<std::size_t>(n));
    }
    REQUIRE(ok.rfind("SIP/2.0 200", 0) == 0);
    const auto to_at = ok.find("\r\nTo:");
    REQUIRE(to_at != std::string::npos);
    to_line = ok.substr(to_at + 2, ok.find("\r\n", to_at + 2) - to_at - 2);
    const auto m_at = ok.find("m=audio ");
    REQUIRE(m_at != std::string::npos);
    rtp_ep = asio::ip::udp::endpoint(lo, static_cast<uint16_t>(std::stoi(ok.substr(m_at + 8))));
    in_dialog("ACK", "z9hG4bKack1", 1);
  }
  void in_dialog(const std::string& method, const std::string& branch, int cseq) {
    sig.send_to(asio::buffer(method + " sip:sluice@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:" + lport +
                             ";branch=" + branch + "\r\n" + dialog + to_line + "\r\nCSeq: " + std::to_string(cseq) + " " +
                             method + "\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"),
                sip_ep);
  }
  void bye() { in_dialog("BYE", "z9hG4bKbye1", 2); }

  // An RTP datagram: header, then 20 ms of mu-law silence.
  static std::vector<uint8_t> rtp(uint16_t seq, uint8_t pt, uint8_t b0 = 0x80) {
    std::vector<uint8_t> d(12 + 160, 0xff);
    const uint8_t header[12] = {b0, pt, uint8_t(seq >> 8), uint8_t(seq), 0, 0, uint8_t(seq >> 8), uint8_t(seq), 1, 2, 3, 4};
    std::copy(std::begin(header), std::end(header), d.begin());
    return d;
  }
};

}  // namespace

TEST_SUITE("sip hostile input") {
  TEST_CASE("malformed and unacceptable requests get their status and the service stays up") {
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
    SUBCASE("a SIPREC multipart body without its closing boundary: 400") {
      const std::string body = "--b1\r\nContent-Type: application/sdp\r\n\r\n" + g729_only;
      CHECK(sip_udp_request(s.cfg.port, invite("c6", "Max-Forwards: 70\r\n", body, "multipart/mixed;boundary=b1"))
                .rfind("SIP/2.0 400", 0) == 0);
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

  TEST_CASE("sip.allowed_sources: an INVITE from an address outside it gets 403 and no call, and from inside the call is answered") {
    const std::string pcmu =
        "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 7000 RTP/AVP 0\r\n";
    {
      config::sip_config cfg;
      cfg.allowed_sources = "192.0.2.0/24, 10.0.0.0/8, fd00::/8";  // the test sends from 127.0.0.1
      sip_served s(cfg);
      std::string whole;
      const auto status = sip_udp_request(s.cfg.port, invite("a1", "Max-Forwards: 70\r\n", pcmu),
                                          std::chrono::milliseconds(3000), &whole);
      CHECK(status.rfind("SIP/2.0 403", 0) == 0);
      CHECK(whole.find("sip.allowed_sources") != std::string::npos);  // the Warning says why
      CHECK(s.sip_calls().empty());
      CHECK(sip_udp_request(s.cfg.port, options("a2")) == "SIP/2.0 200 OK");  // the service goes on
    }
    {
      config::sip_config cfg;
      cfg.allowed_sources = "10.0.0.0/8, 127.0.0.1";
      sip_served s(cfg);
      raw_call call(s.cfg.port, "allowed-1");  // REQUIREs the 200 OK
      call.bye();
      (void)s.ended_call();
    }
  }

  TEST_CASE("sip.tenant: a call from an address in no sip.tenant_sources list is sip.tenant's - a bad tenant or list refuses to start, naming it") {
    config::sip_config cfg;
    cfg.tenant_sources = "globex: 10.0.0.0/8";  // the test calls from 127.0.0.1
    cfg.tenant = "initech";
    sip_served s(cfg);
    {
      raw_call call(s.cfg.port, "fallback-1");  // REQUIREs the 200 OK
      call.bye();
    }
    CHECK(s.ended_call().start.tenant == "initech");

    config::sip_config bad = s.cfg;
    bad.port = free_sip_port();
    bad.tenant = "in/itech";
    auto r = net::sip::sip_service::start(*s.engine, s.calls, bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("sip.tenant = \"in/itech\"") != std::string::npos);
    bad.tenant.clear();
    bad.tenant_sources = "10.0.0.0/8";
    r = net::sip::sip_service::start(*s.engine, s.calls, bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("sip.tenant_sources: \"10.0.0.0/8\" is not") != std::string::npos);
  }

  TEST_CASE("SIP on an address that is not loopback needs sip.allowed_sources or sip.allow_public, and a bad entry is named") {
    sip_served s;  // the engine the service would use
    config::sip_config cfg = s.cfg;
    cfg.host = "0.0.0.0";
    auto r = net::sip::sip_service::start(*s.engine, s.calls, cfg);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("sip.allowed_sources") != std::string::npos);
    CHECK(r.error().message.find("sip.allow_public") != std::string::npos);
    cfg.allowed_sources = "127.0.0.1";  // the callers named: it starts (on a port of its own)
    cfg.port = free_sip_port();
    {
      auto named = net::sip::sip_service::start(*s.engine, s.calls, cfg);
      CHECK_MESSAGE(named.has_value(), (named ? std::string() : named.error().message));
    }
    cfg.host = "127.0.0.1";
    cfg.allowed_sources = "10.0.0.0/8, 10.0.0.300";
    r = net::sip::sip_service::start(*s.engine, s.calls, cfg);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("\"10.0.0.300\" is not an IP address or a network") != std::string::npos);
  }

  TEST_CASE("hostile RTP on a live call: garbage is dropped, a second source is shut out, the call ends normally") {
    sip_served s;
    raw_call call(s.cfg.port, "rtp-hostile");
    auto& media = call.media;
    const auto& rtp_ep = call.rtp_ep;
    auto rtp = [](uint16_t seq, uint8_t pt, uint8_t b0 = 0x80) { return raw_call::rtp(seq, pt, b0); };
    asio::ip::udp::socket intruder(call.ioc, asio::ip::udp::endpoint(call.lo, 0));
    // Empty, shorter than a header, version 1, and 15 CSRCs announced in a 16-byte datagram.
    const std::vector<std::vector<uint8_t>> junk{
        {}, {0x80}, std::vector<uint8_t>(11, 0x80), rtp(1, 0, 0x40), {0x8f, 0, 0, 2, 0, 0, 0, 0, 1, 2, 3, 4, 9, 9, 9, 9}};
    for (const auto& j : junk) media.send_to(asio::buffer(j), rtp_ep);
    for (uint16_t q = 10; q < 20; ++q) media.send_to(asio::buffer(rtp(q, 0)), rtp_ep);  // latches this source
    for (uint16_t q = 20; q < 25; ++q) intruder.send_to(asio::buffer(rtp(q, 0)), rtp_ep);
    media.send_to(asio::buffer(rtp(30, 99)), rtp_ep);     // a payload type never offered
    media.send_to(asio::buffer(rtp(40000, 0)), rtp_ep);   // a sequence jump: a restart
    // A datagram after all of those from the latched source, so the count below is complete
    // once it has arrived: the BYE follows it.
    media.send_to(asio::buffer(rtp(40001, 0)), rtp_ep);

    call.bye();
    const auto c = s.ended_call();
    CHECK(c.end_reason == "hangup");
    const auto& k = c.start.metadata["rtp"][0];
    INFO(k.dump());
    // Loopback delivers every datagram; all 23 were queued at the port before the BYE was sent, and a stopping receiver reads what is queued.
    CHECK(k["datagrams"].get<int>() == 23);
    CHECK(k["not_rtp"].get<int>() == 5);
    CHECK(k["foreign_source"].get<int>() == 5);
    CHECK(k["over_rate"].get<int>() == 0);
    CHECK(s.sip->live_calls() == 0);
  }

  TEST_CASE("an RTP flood from the call's own source past sip.max_stream_kbps is dropped and counted, by the token bucket's arithmetic") {
    config::sip_config cfg;
    cfg.max_stream_kbps = 80;  // 10,000 bytes a second, and a burst of 10,000 bytes
    sip_served s(cfg);
    raw_call call(s.cfg.port, "rtp-flood");
    // 300 datagrams of 172 bytes (51,600 bytes, 6 s of audio) sent at once: the bucket lets
    // floor(10,000 / 172) = 58 through, plus what refills while they are read (10 bytes/ms).
    constexpr int sent = 300, size = 172, burst_passes = 10000 / size;
    const auto t0 = std::chrono::steady_clock::now();
    for (int q = 0; q < sent; ++q) call.media.send_to(asio::buffer(raw_call::rtp(static_cast<uint16_t>(100 + q), 0)), call.rtp_ep);
    const auto sending_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    call.bye();
    const auto c = s.ended_call();
    const auto k = c.start.metadata["rtp"][0];
    INFO(k.dump() << "; sending took " << sending_ms << " ms");
    // The kernel drops what overflows the socket's receive buffer (about 40 of the 300 here);
    // of what sluice read, the bucket passed the burst plus its refill while reading.
    const int read = k["datagrams"].get<int>(), dropped = k["over_rate"].get<int>(), passed = read - dropped;
    CHECK(read <= sent);
    REQUIRE(read > 2 * burst_passes);  // the flood got through to the bucket
    CHECK(passed >= burst_passes);
    // The receiver may read later than the datagrams were sent, so the refill is bounded by the
    // time until the BYE's handling, not by sending_ms; 1 s of refill at most here.
    CHECK(passed <= burst_passes + 10000 / size);
    CHECK(s.sip->live_calls() == 0);
  }

  TEST_CASE("an INVITE whose Via claims TLS over UDP never reaches the call set-up, so its SDES keys are not taken") {
    // The set-up allows SDES keys when the top Via says TLS; sofia's nta drops a request whose
    // Via names another transport than the one it came over. Shown here: the INVITE is not
    // answered, and the OPTIONS sent after it (handled in order on sofia's thread) finds no
    // offer refused and no call taken.
    const std::string savp =
        "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 7000 RTP/SAVP 0\r\n"
        "a=rtpmap:0 PCMU/8000\r\na=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR\r\n";
    sip_served s;
    auto req = invite("v1", "Max-Forwards: 70\r\n", savp);
    const auto via = req.find("SIP/2.0/UDP");
    REQUIRE(via != std::string::npos);
    req.replace(via, 11, "SIP/2.0/TLS");
    CHECK(sip_udp_request(s.cfg.port, req, std::chrono::milliseconds(500)).empty());
    CHECK(sip_udp_request(s.cfg.port, options("v2")) == "SIP/2.0 200 OK");
    const auto f = s.sip->figures_source()();
    CHECK(f.refused_offer == 0);
    CHECK(f.calls == 0);
    CHECK(s.sip_calls().empty());
    // The same offer with its true Via (UDP) reaches the set-up and is refused for its keys.
    std::string whole;
    CHECK(sip_udp_request(s.cfg.port, invite("v3", "Max-Forwards: 70\r\n", savp), std::chrono::milliseconds(3000), &whole)
              .rfind("SIP/2.0 488", 0) == 0);
    CHECK(whole.find("srtp_plain_signalling") != std::string::npos);
    CHECK(s.sip->figures_source()().refused_offer == 1);
  }

  TEST_CASE("the SIP figures for /metrics count calls and refusals by reason, as prometheus_client reads them") {
    temp_dir tmp;
    auto read = [&](const sip_served& s) {
      return prometheus_samples(tmp, net::sip_prometheus(s.sip->figures_source()()), "'sluice_sip_'", "reason");
    };
    // Expected lines, in the order of the exposition; every family from the start, at zero.
    auto expected = [](int active, int calls, int source, int busy, int offer, int request) {
      return "gauge sluice_sip_active_calls - " + std::to_string(active) + "\n" +
             "counter sluice_sip_calls_total - " + std::to_string(calls) + "\n" +
             "counter sluice_sip_refused_total source " + std::to_string(source) + "\n" +
             "counter sluice_sip_refused_total busy " + std::to_string(busy) + "\n" +
             "counter sluice_sip_refused_total offer " + std::to_string(offer) + "\n" +
             "counter sluice_sip_refused_total request " + std::to_string(request) + "\n" +
             "counter sluice_sip_srtp_streams_total - 0\n"
             "counter sluice_sip_srtp_auth_failures_total - 0\n"
             "counter sluice_sip_srtp_replays_total - 0\n";
    };
    {
      config::sip_config cfg;
      cfg.allowed_sources = "10.0.0.0/8";  // not 127.0.0.1
      sip_served s(cfg);
      CHECK(read(s) == expected(0, 0, 0, 0, 0, 0));
      CHECK(sip_udp_request(s.cfg.port, invite("m1", "Max-Forwards: 70\r\n", g729_only)).rfind("SIP/2.0 403", 0) == 0);
      CHECK(read(s) == expected(0, 0, 1, 0, 0, 0));
    }
    config::sip_config cfg;
    cfg.max_calls = 1;
    sip_served s(cfg);
    CHECK(sip_udp_request(s.cfg.port, invite("m2", "Max-Forwards: 70\r\n", g729_only)).rfind("SIP/2.0 488", 0) == 0);
    CHECK(sip_udp_request(s.cfg.port, invite("m3", "Max-Forwards: 70\r\n", "")).rfind("SIP/2.0 488", 0) == 0);
    CHECK(sip_udp_request(s.cfg.port, invite("m4", "Max-Forwards: 70\r\n", "<xml/>", "application/xml"))
              .rfind("SIP/2.0 415", 0) == 0);
    {
      raw_call c(s.cfg.port, "m5");  // taken: the one call sip.max_calls allows
      CHECK(read(s) == expected(1, 1, 0, 0, 2, 1));
      CHECK(sip_udp_request(s.cfg.port, invite("m6", "Max-Forwards: 70\r\n", g729_only)).rfind("SIP/2.0 503", 0) == 0);
      c.bye();
    }
    REQUIRE(s.wait_for([&] { return s.sip->live_calls() == 0; }));
    CHECK(read(s) == expected(0, 1, 0, 1, 2, 1));
  }
}
