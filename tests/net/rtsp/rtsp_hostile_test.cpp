// Hostile and unsupported RTSP from a raw TCP client: each gets its status (never a crash),
// limits hold, and the endpoint goes on serving. Also the session timeout.
#include <sys/socket.h>
#include <sys/time.h>

#include "net/rtsp/rtsp_auth.hpp"
#include "net/rtsp/rtsp_message.hpp"
#include "tests/net/rtsp/rtsp_test_util.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {
constexpr auto reply_limit = std::chrono::milliseconds(5000);

// A raw RTSP connection: send text, read one whole response.
class raw_client {
 public:
  explicit raw_client(uint16_t port) : sock_(ioc_) {
    sock_.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    timeval tv{static_cast<time_t>(reply_limit.count() / 1000), 0};
    ::setsockopt(sock_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  void send(const std::string& bytes) { asio::write(sock_, asio::buffer(bytes)); }
  /// The next response; status 0 when none came (closed or timed out).
  net::rtsp::rtsp_response read() {
    for (;;) {
      auto f = net::rtsp::parse_response(std::span<const uint8_t>(in_.data(), in_.size()), {});
      if (f.kind == net::rtsp::frame_kind::request) {
        in_.erase(in_.begin(), in_.begin() + static_cast<long>(f.consumed));
        return f.response;
      }
      if (f.kind == net::rtsp::frame_kind::error) return {};
      char buf[4096];
      const auto n = ::recv(sock_.native_handle(), buf, sizeof buf, 0);
      if (n <= 0) return {};
      in_.insert(in_.end(), buf, buf + n);
    }
  }
  int status(const std::string& request) {
    send(request);
    return read().status;
  }
  /// Whether the server closed the connection (reads EOF within the limit).
  bool closed_by_server() {
    char buf[256];
    return ::recv(sock_.native_handle(), buf, sizeof buf, 0) == 0;
  }

 private:
  asio::io_context ioc_;
  asio::ip::tcp::socket sock_;
  std::vector<uint8_t> in_;
};

const std::string sdp_pcmu = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=x\r\nt=0 0\r\nm=audio 0 RTP/AVP 0\r\na=control:streamid=0\r\n";

std::string announce(const std::string& url, int cseq, const std::string& sdp = sdp_pcmu,
                     const std::string& type = "application/sdp") {
  return "ANNOUNCE " + url + " RTSP/1.0\r\nCSeq: " + std::to_string(cseq) + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(sdp.size()) + "\r\n\r\n" + sdp;
}

std::string session_of(const net::rtsp::rtsp_response& r) {
  auto s = net::rtsp::find_header(r.headers, "Session");
  return s ? s->substr(0, s->find(';')) : std::string();
}
}  // namespace

TEST_SUITE("rtsp hostile") {
  TEST_CASE("bad requests get 400, 501, 505, 405, 455, 454, 461, 415 and 551, and the connection serves on") {
    rtsp_served s;
    raw_client c(s.rtsp->port());
    const auto url = s.url("h1");
    CHECK(c.status("OPTIONS " + url + " RTSP/1.0\r\n\r\n") == 400);                 // no CSeq
    CHECK(c.status("OPTIONS " + url + " RTSP/1.0\r\nCSeq: x1\r\n\r\n") == 400);     // CSeq not a number
    CHECK(c.status("FROB " + url + " RTSP/1.0\r\nCSeq: 1\r\n\r\n") == 501);
    CHECK(c.status("DESCRIBE " + url + " RTSP/1.0\r\nCSeq: 2\r\n\r\n") == 405);
    CHECK(c.status("OPTIONS " + url + " RTSP/1.0\r\nCSeq: 3\r\nRequire: funky\r\n\r\n") == 551);
    CHECK(c.status("SETUP " + url + "/streamid=0 RTSP/1.0\r\nCSeq: 4\r\nTransport: RTP/AVP/TCP;interleaved=0-1\r\n\r\n") ==
          455);  // before ANNOUNCE
    CHECK(c.status(announce(url, 5, sdp_pcmu, "text/plain")) == 415);
    CHECK(c.status(announce(url, 6, "v=0\r\nm=audio 0 RTP/AVP 96\r\na=rtpmap:96 AMR/8000\r\n")) == 415);
    c.send(announce(url, 7));
    const auto ok = c.read();
    REQUIRE(ok.status == 200);
    CHECK(ok.cseq == 7);
    const auto sid = session_of(ok);
    REQUIRE_FALSE(sid.empty());
    CHECK(c.status("SETUP " + url + "/streamid=0 RTSP/1.0\r\nCSeq: 8\r\nTransport: RTP/AVP;multicast\r\n\r\n") == 461);
    CHECK(c.status("SETUP " + url + "/streamid=0 RTSP/1.0\r\nCSeq: 9\r\nTransport: RAW/RAW/UDP;unicast\r\n\r\n") == 461);
    CHECK(c.status("SETUP " + url + "/nosuch RTSP/1.0\r\nCSeq: 10\r\nTransport: RTP/AVP/TCP;interleaved=0-1\r\n\r\n") ==
          404);
    CHECK(c.status("SETUP " + url + "/streamid=0 RTSP/1.0\r\nCSeq: 11\r\nSession: bogus\r\nTransport: RTP/AVP/TCP;interleaved=0-1\r\n\r\n") ==
          454);
    CHECK(c.status("RECORD " + url + " RTSP/1.0\r\nCSeq: 12\r\nSession: " + sid + "\r\n\r\n") == 455);  // nothing set up
    c.send("SETUP " + url + "/streamid=0 RTSP/1.0\r\nCSeq: 13\r\nSession: " + sid +
           "\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1;mode=record\r\n\r\n");
    const auto setup = c.read();
    CHECK(setup.status == 200);
    CHECK(net::rtsp::find_header(setup.headers, "Transport").value_or("") == "RTP/AVP/TCP;unicast;interleaved=0-1;mode=record");
    CHECK(c.status("GET_PARAMETER " + url + " RTSP/1.0\r\nCSeq: 14\r\nSession: " + sid + "\r\n\r\n") == 200);
    CHECK(c.status("OPTIONS " + url + " RTSP/1.0\r\nCSeq: 15\r\n\r\n") == 200);
    CHECK(s.of("rtsp").empty());  // no RECORD, no call
  }

  TEST_CASE("over-long headers and bodies get 413 and the connection is closed, the endpoint serves on") {
    config::rtsp_config cfg;
    cfg.max_header_bytes = 1024;
    cfg.max_body_bytes = 512;
    rtsp_served s(cfg);
    {
      raw_client c(s.rtsp->port());
      c.send("OPTIONS " + s.url("x") + " RTSP/1.0\r\nCSeq: 1\r\nX-Junk: " + std::string(2000, 'j'));
      CHECK(c.read().status == 413);
      CHECK(c.closed_by_server());
    }
    {
      raw_client c(s.rtsp->port());
      CHECK(c.status(announce(s.url("x"), 1, "v=0\r\n" + std::string(600, 'a'))) == 413);
      CHECK(c.closed_by_server());
    }
    raw_client c(s.rtsp->port());
    CHECK(c.status("OPTIONS " + s.url("x") + " RTSP/1.0\r\nCSeq: 2\r\n\r\n") == 200);
  }

  TEST_CASE("past rtsp.max_sessions an ANNOUNCE gets 503, and a freed session makes room") {
    config::rtsp_config cfg;
    cfg.max_sessions = 1;
    rtsp_served s(cfg);
    auto a = std::make_unique<raw_client>(s.rtsp->port());
    CHECK(a->status(announce(s.url("one"), 1)) == 200);
    raw_client b(s.rtsp->port());
    CHECK(b.status(announce(s.url("two"), 1)) == 503);
    a.reset();  // the first connection drops: its session ends
    REQUIRE(poll_until([&] { return s.rtsp->live_sessions() == 0; }, std::chrono::seconds(10)));
    raw_client c(s.rtsp->port());
    CHECK(c.status(announce(s.url("three"), 1)) == 200);
  }

  TEST_CASE("interleaved channels: RTP and RTCP on one channel, or a channel of another stream, get 461") {
    rtsp_served s;
    raw_client c(s.rtsp->port());
    const auto url = s.url("two");
    const std::string two = sdp_pcmu + "m=audio 0 RTP/AVP 0\r\na=control:streamid=1\r\n";
    c.send(announce(url, 1, two));
    const auto ok = c.read();
    REQUIRE(ok.status == 200);
    const auto sid = session_of(ok);
    auto setup = [&](int cseq, const std::string& stream, const std::string& channels) {
      return c.status("SETUP " + url + "/" + stream + " RTSP/1.0\r\nCSeq: " + std::to_string(cseq) + "\r\nSession: " +
                      sid + "\r\nTransport: RTP/AVP/TCP;unicast;interleaved=" + channels + ";mode=record\r\n\r\n");
    };
    CHECK(setup(2, "streamid=0", "4-4") == 461);  // RTCP would arrive as RTP
    CHECK(setup(3, "streamid=0", "0-1") == 200);
    CHECK(setup(4, "streamid=1", "1-2") == 461);  // its RTP on the first stream's RTCP channel
    CHECK(setup(5, "streamid=1", "2-0") == 461);  // its RTCP on the first stream's RTP channel
    CHECK(setup(6, "streamid=1", "2-3") == 200);
  }

  TEST_CASE("pushes on an address that is not loopback need API keys or rtsp.allow_public") {
    rtsp_served s;  // the engine the service would use
    config::rtsp_config cfg = s.cfg;
    cfg.host = "0.0.0.0";
    auto r = net::rtsp::rtsp_service::start(*s.engine, s.calls, cfg, {});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("rtsp.allow_public") != std::string::npos);
    CHECK(r.error().message.find("auth.keys_file") != std::string::npos);
    cfg.allow_public = true;  // said explicitly: it starts (on any free port)
    cfg.port = 0;
    auto open = net::rtsp::rtsp_service::start(*s.engine, s.calls, cfg, {});
    CHECK_MESSAGE(open.has_value(), (open ? std::string() : open.error().message));
  }

  TEST_CASE("a recording session that goes silent ends after rtsp.session_timeout_s") {
    config::rtsp_config cfg;
    cfg.session_timeout_s = 1;
    rtsp_served s(cfg);
    raw_client c(s.rtsp->port());
    const auto url = s.url("quiet");
    c.send(announce(url, 1));
    const auto sid = session_of(c.read());
    REQUIRE_FALSE(sid.empty());
    REQUIRE(c.status("SETUP " + url + "/streamid=0 RTSP/1.0\r\nCSeq: 2\r\nSession: " + sid +
                     "\r\nTransport: RTP/AVP/TCP;unicast;interleaved=0-1;mode=record\r\n\r\n") == 200);
    REQUIRE(c.status("RECORD " + url + " RTSP/1.0\r\nCSeq: 3\r\nSession: " + sid + "\r\n\r\n") == 200);
    REQUIRE(s.wait_ended("rtsp", 1, std::chrono::seconds(15)));
    CHECK(s.of("rtsp")[0].end_reason == "session timeout");
    CHECK(c.closed_by_server());
  }

  TEST_CASE("invalid API keys count towards auth.max_failures: the address is then refused 503 with Retry-After, a valid key too, in the limiter the server shares with HTTP") {
    rtsp_keys keys;
    config::auth_config a;
    a.max_failures = 3;
    a.failure_window_s = 60;
    a.lockout_s = 30;
    auto limiter = std::make_shared<net::auth::failure_limiter>(a);
    rtsp_served s({}, keys.check(), limiter);
    const auto url = s.url("guess");
    const std::string wrong = keys.streamer.key.substr(0, keys.streamer.key.size() - 1) +
                              (keys.streamer.key.back() == '0' ? "1" : "0");
    // The Authorization header ffmpeg sends for rtsp://agent:<key>@ (RFC 7617 Basic).
    const auto basic = [](const std::string& key) {
      net::rtsp::auth_challenge b;
      b.scheme = net::rtsp::auth_scheme::basic;
      return "Authorization: " + net::rtsp::authorization(b, "agent", key, "ANNOUNCE", "") + "\r\n";
    };
    raw_client c(s.rtsp->port());
    // No key at all is a first try, not a failure: answered 401 any number of times.
    for (int i = 0; i < 5; ++i) CHECK(c.status(announce(url, 1 + i)) == 401);
    CHECK(limiter->lockouts() == 0);
    // A valid key still gets through before the lockout (the ANNOUNCE is answered 200).
    {
      raw_client ok(s.rtsp->port());
      ok.send("ANNOUNCE " + url + " RTSP/1.0\r\nCSeq: 1\r\n" + basic(keys.streamer.key) +
              "Content-Type: application/sdp\r\nContent-Length: " + std::to_string(sdp_pcmu.size()) + "\r\n\r\n" +
              sdp_pcmu);
      CHECK(ok.read().status == 200);
    }
    // Three wrong keys: 401 each, and the third locks the address out.
    for (int i = 0; i < 3; ++i) {
      c.send("ANNOUNCE " + url + " RTSP/1.0\r\nCSeq: " + std::to_string(10 + i) + "\r\n" + basic(wrong) +
             "Content-Type: application/sdp\r\nContent-Length: " + std::to_string(sdp_pcmu.size()) + "\r\n\r\n" +
             sdp_pcmu);
      CHECK(c.read().status == 401);
    }
    CHECK(limiter->lockouts() == 1);
    // Now even the valid key is refused, with Retry-After, and the connection is closed.
    raw_client late(s.rtsp->port());
    late.send("ANNOUNCE " + url + " RTSP/1.0\r\nCSeq: 1\r\n" + basic(keys.streamer.key) +
              "Content-Type: application/sdp\r\nContent-Length: " + std::to_string(sdp_pcmu.size()) + "\r\n\r\n" +
              sdp_pcmu);
    const auto r = late.read();
    CHECK(r.status == 503);
    const auto retry = net::rtsp::find_header(r.headers, "Retry-After");
    REQUIRE(retry.has_value());
    CHECK(std::stoi(*retry) >= 1);
    CHECK(std::stoi(*retry) <= 30);
    // The same words HTTP's 429 uses, with this limiter's numbers and the Retry-After value.
    CHECK(r.body == "too many invalid API keys from this address (auth.max_failures = 3 within 60 s): retry in " +
                        *retry + " s\r\n");
    CHECK(late.closed_by_server());
    // The lockout is recorded in the limiter passed in, the one `sluice serve` passes from its
    // HTTP server (net::server::auth_failures()).
    CHECK(limiter->retry_after("127.0.0.1").has_value());
    // OPTIONS needs no key and is still answered.
    raw_client opt(s.rtsp->port());
    CHECK(opt.status("OPTIONS " + url + " RTSP/1.0\r\nCSeq: 1\r\n\r\n") == 200);
  }
}
