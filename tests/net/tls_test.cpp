// TLS for `sluice serve` over loopback, with self-signed certificates made at test time by the
// openssl command line: https and wss through verifying Beast clients (and curl as an
// independent peer), a plain client refused cleanly on a TLS port, the minimum TLS version,
// start-up validation of the certificate files, and reload of the certificate for new
// connections while open ones keep theirs.
#include "tests/net/tls_test_util.hpp"

#include <fstream>

#include "net/tls_context.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

const std::string start_8k = R"({"type":"start","sample_rate":8000,"encoding":"pcm_s16le","channels":1})";
const std::string end_msg = R"({"type":"end"})";

std::vector<std::string> finals_of(const ws_result& r) {
  std::vector<std::string> out;
  for (const auto& m : r.messages)
    if (m.value("type", "") == "final") out.push_back(m["text"]);
  return out;
}

config::sluice_config tls_config(const self_signed& c) {
  config::sluice_config cfg;
  cfg.server.tls_cert_file = c.cert;
  cfg.server.tls_key_file = c.key;
  cfg.server.tls_reload_check_s = 0;  // reloads only when a test asks
  return cfg;
}

// How many wss clients half-close at once, and how often (see the half-close test).
constexpr int half_close_clients = 3;
constexpr int half_close_rounds = 2;

struct half_close_result {
  std::vector<std::string> finals;
  std::string last_type;
  int close_code = -1;
  std::string error;
};

// A wss client that sends the call and its end, then shuts down its sending half of the TCP
// connection under the TLS layer (a FIN without close_notify), and reads until the server's close.
half_close_result wss_half_close(uint16_t port, const std::string& ca, const std::vector<std::vector<uint8_t>>& frames) {
  half_close_result out;
  asio::io_context ioc;
  auto ctx = client_context(ca);
  websocket::stream<beast::ssl_stream<tcp::socket>> ws(ioc, *ctx);
  beast::get_lowest_layer(ws).connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  ws.next_layer().handshake(ssl::stream_base::client);
  ws.handshake("localhost", "/v1/stream");
  ws.text(true);
  ws.write(asio::buffer(start_8k));
  ws.binary(true);
  for (const auto& f : frames) ws.write(asio::buffer(f));
  ws.text(true);
  ws.write(asio::buffer(end_msg));
  beast::get_lowest_layer(ws).shutdown(tcp::socket::shutdown_send);
  beast::error_code ec;
  for (;;) {
    beast::flat_buffer b;
    ws.read(b, ec);
    if (ec) break;
    auto m = json::parse(beast::buffers_to_string(b.data()), nullptr, false);
    out.last_type = m.value("type", std::string());
    if (out.last_type == "final") out.finals.push_back(m["text"]);
  }
  out.error = ec.message();
  // The server's close frame arrived (Beast then fails to answer it: our half is shut).
  if (ws.reason().code != websocket::close_code::none) out.close_code = ws.reason().code;
  return out;
}

// The stalled-handshake test: how many clients open TCP and never start TLS, and the
// server.idle_timeout_s that bounds their handshake there.
constexpr int stalled_handshakes = 3;
constexpr int stalled_timeout_s = 5;

// A wss /v1/stream client driven step by step.
struct wss_stepped {
  asio::io_context ioc;
  std::unique_ptr<ssl::context> ctx;
  websocket::stream<beast::ssl_stream<tcp::socket>> ws;
  wss_stepped(uint16_t port, const std::string& ca) : ctx(client_context(ca)), ws(ioc, *ctx) {
    beast::get_lowest_layer(ws).connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    ws.next_layer().handshake(ssl::stream_base::client);
    ws.handshake("localhost", "/v1/stream");
  }
  void text(const std::string& t) {
    ws.text(true);
    ws.write(asio::buffer(t));
  }
  void binary(const std::vector<uint8_t>& b) {
    ws.binary(true);
    ws.write(asio::buffer(b));
  }
  // Reads to the server's close: the messages.
  ws_result read_to_close() {
    ws_result out;
    beast::error_code ec;
    for (;;) {
      beast::flat_buffer b;
      ws.read(b, ec);
      if (ec) break;
      out.messages.push_back(json::parse(beast::buffers_to_string(b.data()), nullptr, false));
    }
    if (ec == websocket::error::closed) out.close_code = ws.reason().code;
    else out.error = ec.message();
    return out;
  }
};

// GET /healthz over https: the status (the server still serves).
int http_request_tls(uint16_t port, const std::string& ca) { return https_client(port, ca).get("/healthz").status; }

}  // namespace

TEST_SUITE("tls") {
  TEST_CASE("tls files are checked on load: a missing file and a key of another certificate get clear errors") {
    temp_dir dir;
    const auto a = make_self_signed(dir, "a", 1), b = make_self_signed(dir, "b", 2);
    config::server_config cfg;
    cfg.tls_cert_file = a.cert;
    cfg.tls_key_file = a.key;
    auto ok = net::load_tls_context(cfg);
    REQUIRE_MESSAGE(ok.has_value(), ok.error().message);
    CHECK(net::tls_fingerprint(**ok) == openssl_fingerprint(a.cert));

    cfg.tls_cert_file = dir.file("absent.crt");
    auto missing = net::load_tls_context(cfg);
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().code == errc::io);
    CHECK(missing.error().message.find("absent.crt") != std::string::npos);

    cfg.tls_cert_file = a.cert;
    cfg.tls_key_file = b.key;
    auto mismatch = net::load_tls_context(cfg);
    REQUIRE_FALSE(mismatch.has_value());
    CHECK(mismatch.error().code == errc::invalid_config);
    CHECK_MESSAGE(mismatch.error().message.find("tls_key_file") != std::string::npos, mismatch.error().message);

    write_text(dir.file("junk.crt"), "not a certificate\n");
    cfg.tls_cert_file = dir.file("junk.crt");
    cfg.tls_key_file = a.key;
    auto junk = net::load_tls_context(cfg);
    REQUIRE_FALSE(junk.has_value());
    CHECK(junk.error().message.find("tls_cert_file") != std::string::npos);

    config::server_config half;
    half.tls_cert_file = a.cert;
    CHECK_FALSE(half.check().empty());  // a certificate without its key is a config error
  }

  TEST_CASE("server start with an unusable tls file fails with the file named and leaves the engine serving") {
    temp_dir dir;
    const auto a = make_self_signed(dir, "a", 5), b = make_self_signed(dir, "b", 6);
    served s;  // a plain server: its engine is the one the failed starts are given
    auto cfg = tls_config(a);
    cfg.server.port = 0;
    cfg.server.tls_cert_file = dir.file("absent.crt");
    auto missing = net::server::start(*s.engine, cfg.server, cfg.auth);
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().message.find("absent.crt") != std::string::npos);
    cfg.server.tls_cert_file = a.cert;
    cfg.server.tls_key_file = b.key;
    auto mismatch = net::server::start(*s.engine, cfg.server, cfg.auth);
    REQUIRE_FALSE(mismatch.has_value());
    CHECK(mismatch.error().message.find("tls_key_file") != std::string::npos);
    // The engine was not shut down by the failed starts: a stream is still served.
    auto r = ws_session(s.port, "/v1/stream", {start_8k}, call_pcm16_frames(), {end_msg});
    CHECK(r.close_code == 1000);
    CHECK(finals_of(r).size() >= 2);
  }

  TEST_CASE("https: a verifying client gets /healthz and curl agrees - a plain client gets 400 and the port serves on") {
    temp_dir dir;
    const auto c = make_self_signed(dir, "srv", 11);
    served s(tls_config(c));
    CHECK(s.server->tls());
    https_client client(s.port, c.cert);
    auto r = client.get("/healthz");
    CHECK(r.status == 200);
    CHECK(r.body == "ok\n");
    CHECK(client.fingerprint() == openssl_fingerprint(c.cert));

    // A plain HTTP client on the TLS port: one readable refusal, then the connection ends.
    auto plain = http_request(s.port, http::verb::get, "/healthz");
    CHECK(plain.status == 400);
    CHECK_MESSAGE(plain.body.find("https://") != std::string::npos, plain.body);

    // The same connection and a new one still work after the refusal.
    CHECK(client.get("/readyz").status == 200);
    https_client again(s.port, c.cert);
    CHECK(again.get("/healthz").status == 200);

    // The field's own tool as an independent peer (verifying against the same CA file).
    const auto [out, rc] = run_command("curl -sS --max-time 20 --cacert '" + c.cert + "' https://localhost:" +
                                       std::to_string(s.port) + "/healthz 2>&1");
    CHECK_MESSAGE(rc == 0, out);
    CHECK(out == "ok\n");
  }

  TEST_CASE("tls_min_version 1.3 refuses a client that offers at most TLS 1.2") {
    temp_dir dir;
    const auto c = make_self_signed(dir, "srv", 12);
    auto cfg = tls_config(c);
    cfg.server.tls_min_version = "1.3";
    served s(cfg);
    asio::io_context ioc;
    auto ctx = client_context(c.cert);
    REQUIRE(SSL_CTX_set_max_proto_version(ctx->native_handle(), TLS1_2_VERSION) == 1);
    beast::ssl_stream<beast::tcp_stream> old_client(ioc, *ctx);
    beast::get_lowest_layer(old_client).connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.port));
    beast::error_code ec;
    old_client.handshake(ssl::stream_base::client, ec);
    CHECK(ec);  // protocol version alert
    https_client modern(s.port, c.cert);  // TLS 1.3: served
    CHECK(modern.get("/healthz").status == 200);
  }

  TEST_CASE("wss /v1/stream: the bundled call gets the same finals as over plain ws") {
    const auto frames = call_pcm16_frames();
    std::vector<std::string> want;
    {
      served plain;
      auto ref = ws_session(plain.port, "/v1/stream", {start_8k}, frames, {end_msg});
      REQUIRE(ref.close_code == 1000);
      want = finals_of(ref);
    }
    REQUIRE(want.size() >= 2);
    temp_dir dir;
    const auto c = make_self_signed(dir, "srv", 13);
    served s(tls_config(c));
    auto r = wss_session(s.port, c.cert, "/v1/stream", {start_8k}, frames, {end_msg});
    CHECK_MESSAGE(r.error.empty(), r.error);
    CHECK(r.close_code == 1000);
    REQUIRE(r.messages.size() >= 3);
    CHECK(r.messages.front()["type"] == "ready");
    CHECK(r.messages.back()["type"] == "end");
    CHECK(finals_of(r) == want);
  }

  TEST_CASE("wss: clients that send their end and then half-close TCP under TLS get every final and the end") {
    // Regression: the server's heap was corrupted (about one run in five) when a wss client
    // half-closed after its end; several clients at once, twice, make the race likely.
    const auto frames = call_pcm16_frames();
    std::vector<std::string> want;
    {
      served plain;
      want = finals_of(ws_session(plain.port, "/v1/stream", {start_8k}, frames, {end_msg}));
    }
    REQUIRE(want.size() >= 2);
    temp_dir dir;
    const auto c = make_self_signed(dir, "srv", 14);
    served s(tls_config(c));
    for (int round = 0; round < half_close_rounds; ++round) {
      std::vector<half_close_result> got(half_close_clients);
      std::vector<std::thread> clients;
      for (auto& g : got) clients.emplace_back([&, out = &g] { *out = wss_half_close(s.port, c.cert, frames); });
      for (auto& t : clients) t.join();
      for (const auto& g : got) {
        CHECK_MESSAGE(g.close_code == static_cast<int>(websocket::close_code::normal), g.error);
        CHECK(g.last_type == "end");
        CHECK(g.finals == want);
      }
    }
    CHECK(http_request_tls(s.port, c.cert) == 200);
  }

  TEST_CASE("max_connections counts clients still in their TLS handshake: the next one is closed while they hold every slot - once they time out a client is served") {
    const auto frames = call_pcm16_frames();
    std::vector<std::string> want;
    {
      served plain;
      want = finals_of(ws_session(plain.port, "/v1/stream", {start_8k}, frames, {end_msg}));
    }
    REQUIRE(want.size() >= 2);
    temp_dir dir;
    const auto c = make_self_signed(dir, "srv", 41);
    auto cfg = tls_config(c);
    cfg.server.max_connections = stalled_handshakes + 1;  // the stalled clients and one honest stream
    cfg.server.idle_timeout_s = stalled_timeout_s;
    served s(cfg);

    wss_stepped honest(s.port, c.cert);
    honest.text(start_8k);
    for (std::size_t i = 0; i < frames.size() / 2; ++i) honest.binary(frames[i]);

    // Clients that open TCP and never send their TLS hello.
    asio::io_context ioc;
    std::vector<tcp::socket> stalled;
    for (int i = 0; i < stalled_handshakes; ++i) {
      stalled.emplace_back(ioc);
      stalled.back().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.port));
    }
    // Each holds a slot while it stalls.
    CHECK(poll_until([&] { return s.server->open_connections() == stalled_handshakes + 1; }));
    // Every slot is taken: the next client is closed before its handshake.
    CHECK_THROWS(https_client(s.port, c.cert));

    for (std::size_t i = frames.size() / 2; i < frames.size(); ++i) honest.binary(frames[i]);
    honest.text(end_msg);
    const auto r = honest.read_to_close();
    CHECK_MESSAGE(r.close_code == 1000, r.error);
    CHECK(finals_of(r) == want);

    // The stalled handshakes end at server.idle_timeout_s (the server closes them) and their
    // slots are free again.
    CHECK(poll_until([&] { return s.server->open_connections() == 0; }));
    for (auto& sock : stalled) {
      std::array<char, 1> byte{};
      beast::error_code ec;
      sock.read_some(asio::buffer(byte), ec);
      CHECK(ec == asio::error::eof);
    }
    CHECK(http_request_tls(s.port, c.cert) == 200);
  }

  TEST_CASE("certificate reload: new connections get the new certificate and an open one keeps working") {
    temp_dir dir;
    const auto first = make_self_signed(dir, "first", 21), second = make_self_signed(dir, "second", 22);
    const auto first_fp = openssl_fingerprint(first.cert), second_fp = openssl_fingerprint(second.cert);
    REQUIRE(first_fp != second_fp);
    // The server reads its certificate from live.crt/live.key, replaced in place below.
    const self_signed live{dir.file("live.crt"), dir.file("live.key")};
    write_text(live.cert, read_text(first.cert));
    write_text(live.key, read_text(first.key));
    served s(tls_config(live));

    https_client open_before(s.port, first.cert);
    CHECK(open_before.get("/healthz").status == 200);
    CHECK(open_before.fingerprint() == first_fp);

    write_text(live.cert, read_text(second.cert));
    write_text(live.key, read_text(second.key));
    auto reloaded = s.server->reload_tls();
    REQUIRE_MESSAGE(reloaded.has_value(), reloaded.error().message);

    https_client opened_after(s.port, second.cert);  // verifies only against the second cert
    CHECK(opened_after.fingerprint() == second_fp);
    CHECK(opened_after.get("/healthz").status == 200);
    // The connection opened before the reload goes on with its certificate.
    CHECK(open_before.get("/healthz").status == 200);
    CHECK(open_before.fingerprint() == first_fp);

    // A broken replacement (the first key beside the second certificate) is refused and the
    // second certificate stays in use.
    write_text(live.key, read_text(first.key));
    auto bad = s.server->reload_tls();
    REQUIRE_FALSE(bad.has_value());
    CHECK_MESSAGE(bad.error().message.find("tls_key_file") != std::string::npos, bad.error().message);
    https_client after_bad(s.port, second.cert);
    CHECK(after_bad.fingerprint() == second_fp);
    CHECK(after_bad.get("/healthz").status == 200);
  }

  TEST_CASE("tls context store: a change of the files is reloaded once and unchanged files are not") {
    temp_dir dir;
    const auto first = make_self_signed(dir, "first", 31), second = make_self_signed(dir, "second", 32);
    const self_signed live{dir.file("live.crt"), dir.file("live.key")};
    write_text(live.cert, read_text(first.cert));
    write_text(live.key, read_text(first.key));
    config::server_config cfg;
    cfg.tls_cert_file = live.cert;
    cfg.tls_key_file = live.key;
    auto store = net::tls_context_store::create(cfg);
    REQUIRE(store.has_value());
    CHECK_FALSE((*store)->reload_if_changed());
    const auto before = (*store)->current();

    // Replaced in place; the modification time is moved on explicitly, because two writes in
    // the same clock tick of the file system can carry the same time (and these files have
    // the same size).
    const auto t0 = std::filesystem::last_write_time(live.cert);
    write_text(live.cert, read_text(second.cert));
    write_text(live.key, read_text(second.key));
    std::filesystem::last_write_time(live.cert, t0 + std::chrono::seconds(1));
    std::filesystem::last_write_time(live.key, t0 + std::chrono::seconds(1));
    CHECK((*store)->reload_if_changed());
    CHECK(net::tls_fingerprint(*(*store)->current()) == openssl_fingerprint(second.cert));
    CHECK(net::tls_fingerprint(*before) == openssl_fingerprint(first.cert));  // still intact for its holders
    CHECK_FALSE((*store)->reload_if_changed());
  }
}
