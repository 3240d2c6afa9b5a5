// The protocol ports of [listeners]: each bound where configured (port 0 in tests), speaking only
// its protocol on any path, with its own connection limit; disabled ones are not bound; a port
// that cannot be bound or two listeners on one port are refused at start with the key named.
#include "tests/net/net_test_util.hpp"

using namespace sluice;
using namespace sluice::test;

TEST_SUITE("listeners") {
  TEST_CASE("each protocol port speaks its protocol on any path - plain HTTP there gets 400 naming it") {
    served s({}, true);
    const uint16_t funasr = s.server->port(net::ws_listener::funasr);
    const uint16_t vosk = s.server->port(net::ws_listener::vosk);
    REQUIRE(funasr != 0);
    REQUIRE(vosk != 0);
    CHECK(s.server->port(net::ws_listener::sherpa) != 0);
    CHECK(s.server->ports().size() == 4);
    CHECK(s.server->ports().front().port == s.port);
    // FunASR on some path of its own port: FunASR's refusal of a bad mode, not a 404.
    auto r = ws_session(funasr, "/any/path", {R"({"mode":"fast"})"}, {}, {});
    REQUIRE_FALSE(r.messages.empty());
    CHECK(r.messages.back().value("code", std::string()) == "bad_request");
    CHECK(r.close_code == 1003);
    // /v1/stream on the Vosk port is Vosk, not sluice: a sluice start is an unknown Vosk message.
    auto v = ws_session(vosk, "/v1/stream", {R"({"type":"start"})"}, {}, {});
    REQUIRE_FALSE(v.messages.empty());
    CHECK(v.messages.back().value("error", std::string()).find("expected") != std::string::npos);
    auto h = http_request(vosk, http::verb::get, "/healthz");
    CHECK(h.status == 400);
    CHECK(h.body.find("vosk") != std::string::npos);
    CHECK(http_request(s.port, http::verb::get, "/healthz").status == 200);
  }

  TEST_CASE("a protocol port's own connection limit refuses past it while the other ports serve") {
    config::sluice_config cfg;
    cfg.listeners.vosk_max_connections = 1;
    served s(cfg, true);
    const uint16_t vosk = s.server->port(net::ws_listener::vosk);
    asio::io_context ioc;
    tcp::socket held(ioc);
    held.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), vosk));
    // Once the held connection is counted the next one on that port gets 503 naming its key.
    http_reply refused;
    CHECK(poll_until([&] { return (refused = http_request(vosk, http::verb::get, "/")).status == 503; }));
    CHECK(refused.body.find("listeners.vosk_max_connections") != std::string::npos);
    CHECK(http_request(s.port, http::verb::get, "/healthz").status == 200);
    CHECK(http_request(s.server->port(net::ws_listener::funasr), http::verb::get, "/").status == 400);
    held.close();
    CHECK(poll_until([&] { return http_request(vosk, http::verb::get, "/").status == 400; }));
  }

  TEST_CASE("disabled listeners are not bound - a busy port or two listeners on one port fail the start, naming the key") {
    config::sluice_config cfg;
    cfg.listeners.sherpa = false;
    served s(cfg, true);
    CHECK(s.server->port(net::ws_listener::sherpa) == 0);
    CHECK(s.server->ports().size() == 3);

    config::server_config sc;
    sc.port = 0;
    config::listeners_config busy = net::server::no_listeners();
    busy.vosk = true;
    busy.vosk_port = s.port;  // taken by the served main port
    auto r = net::server::start(*s.engine, sc, {}, busy);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == errc::io);
    CHECK(r.error().message.find("listeners.vosk_port") != std::string::npos);

    config::listeners_config twice;
    twice.funasr_port = twice.vosk_port = 12345;
    auto t = net::server::start(*s.engine, sc, {}, twice);
    REQUIRE_FALSE(t.has_value());
    CHECK(t.error().code == errc::invalid_config);
    CHECK(t.error().message.find("funasr_port and vosk_port") != std::string::npos);
  }
}
