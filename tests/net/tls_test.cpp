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

// A wss client on OpenSSL directly (no Beast: asio's TLS stream cannot send a close_notify and
// go on reading), with its WebSocket frames by hand (RFC 6455 5.2; masked with a zero key,
// which 5.3 allows): it sends the call and its end, then its TLS close_notify (SSL_shutdown
// once: a TLS-level half-close, RFC 8446 6.1), and reads with SSL_read until the server's own
// close_notify, as OpenSSL's SSL_shutdown manual page says a half-closing peer does.
struct close_notify_result {
  std::vector<std::string> finals;
  std::string last_type;
  int close_code = -1;
  bool server_close_notify = false;  ///< SSL_read ended with SSL_ERROR_ZERO_RETURN
  std::string version;               ///< the negotiated TLS version
  bool timed_out = false;            ///< nothing came for 30 s and the connection stayed open
  std::string error;
};

// `after_pong`: after the end, a ping first, and the close_notify once its pong is back (the
// server has read past the end and is reading again); otherwise right after the end.
close_notify_result wss_close_notify(uint16_t port, const std::string& ca, const std::vector<std::vector<uint8_t>>& frames,
                                     int max_version, bool after_pong) {
  close_notify_result out;
  asio::io_context ioc;
  tcp::socket sock(ioc);
  sock.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  REQUIRE(SSL_CTX_load_verify_locations(ctx.get(), ca.c_str(), nullptr) == 1);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (max_version) SSL_CTX_set_max_proto_version(ctx.get(), max_version);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  SSL_set_fd(ssl.get(), sock.native_handle());
  SSL_set_tlsext_host_name(ssl.get(), "localhost");
  REQUIRE(SSL_connect(ssl.get()) == 1);
  out.version = SSL_get_version(ssl.get());
  // A server that never ends the stream fails the test instead of hanging it.
  timeval tv{30, 0};
  ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  auto put = [&](const std::string& bytes) { REQUIRE(SSL_write(ssl.get(), bytes.data(), static_cast<int>(bytes.size())) > 0); };
  put("GET /v1/stream HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
  // Everything the server sends, as read; the upgrade's response first.
  std::string in;
  auto fill = [&]() {
    char buf[16384];
    const int n = SSL_read(ssl.get(), buf, sizeof buf);
    if (n > 0) {
      in.append(buf, static_cast<std::size_t>(n));
      return true;
    }
    const int e = SSL_get_error(ssl.get(), n);
    if (e == SSL_ERROR_ZERO_RETURN) out.server_close_notify = true;
    else out.error = "SSL_read: error " + std::to_string(e);
    out.timed_out = e == SSL_ERROR_WANT_READ;
    return false;
  };
  while (in.find("\r\n\r\n") == std::string::npos) REQUIRE(fill());
  REQUIRE(in.rfind("HTTP/1.1 101", 0) == 0);
  in.erase(0, in.find("\r\n\r\n") + 4);
  auto frame = [](uint8_t opcode, const std::string& payload) {
    std::string f(1, static_cast<char>(0x80 | opcode));
    const auto n = payload.size();
    if (n < 126) {
      f += static_cast<char>(0x80 | n);
    } else if (n <= 0xffff) {
      f += static_cast<char>(0x80 | 126);
      f += static_cast<char>(n >> 8);
      f += static_cast<char>(n & 0xff);
    } else {
      f += static_cast<char>(0x80 | 127);
      for (int shift = 56; shift >= 0; shift -= 8) f += static_cast<char>((n >> shift) & 0xff);
    }
    f += std::string(4, '\0');  // the masking key: zeros leave the payload as it is
    return f + payload;
  };
  // Takes the whole frames read so far; true once a pong was among them.
  bool ponged = false;
  auto take_frames = [&]() {
    while (in.size() >= 2) {
      const auto b1 = static_cast<uint8_t>(in[1]) & 0x7f;
      std::size_t head = 2, n = b1;
      if (b1 == 126) {
        if (in.size() < 4) break;
        n = (static_cast<std::size_t>(static_cast<uint8_t>(in[2])) << 8) | static_cast<uint8_t>(in[3]);
        head = 4;
      } else if (b1 == 127) {
        if (in.size() < 10) break;
        n = 0;
        for (int i = 2; i < 10; ++i) n = (n << 8) | static_cast<uint8_t>(in[i]);
        head = 10;
      }
      if (in.size() < head + n) break;
      const auto opcode = static_cast<uint8_t>(in[0]) & 0x0f;
      const std::string payload = in.substr(head, n);
      in.erase(0, head + n);
      if (opcode == 0x1) {
        const auto m = json::parse(payload, nullptr, false);
        out.last_type = m.value("type", std::string());
        if (out.last_type == "final") out.finals.push_back(m["text"]);
      } else if (opcode == 0x8 && payload.size() >= 2) {
        out.close_code = (static_cast<uint8_t>(payload[0]) << 8) | static_cast<uint8_t>(payload[1]);
      } else if (opcode == 0xA) {
        ponged = true;
      }
    }
  };
  put(frame(0x1, start_8k));
  for (const auto& b : frames) put(frame(0x2, std::string(b.begin(), b.end())));
  put(frame(0x1, end_msg));
  if (after_pong) {
    put(frame(0x9, "after the end"));
    while (!ponged && out.close_code < 0) {
      take_frames();
      if (!ponged && out.close_code < 0) REQUIRE(fill());
    }
  }
  CHECK(SSL_shutdown(ssl.get()) == 0);  // our close_notify is out; the server's has not come
  // The server's frames until its close_notify (or an error).
  do take_frames();
  while (fill());
  return out;
}

// The close_notify tests' stream: the call four times over (110 s), all of it taken in at once
// (a high flow-control mark, `backlog_mark_ms`), so that once the server has read the end the
// engine still has most of the call to recognize.
constexpr int backlog_mark_ms = 600000;
std::vector<std::vector<uint8_t>> call_four_times() {
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 4; ++i)
    for (auto& f : call_pcm16_frames()) frames.push_back(std::move(f));
  return frames;
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

  TEST_CASE("wss over TLS 1.3: a client that sends its close_notify after its end (a TLS half-close) gets every final, the end and the close - then the server's close_notify") {
    const auto frames = call_four_times();
    temp_dir dir;
    const auto c = make_self_signed(dir, "srv", 15);
    auto cfg = tls_config(c);
    cfg.server.ws_max_buffered_audio_ms = backlog_mark_ms;
    std::vector<std::string> want;
    {
      config::sluice_config plain_cfg;
      plain_cfg.server.ws_max_buffered_audio_ms = backlog_mark_ms;
      served plain(plain_cfg);
      want = finals_of(ws_session(plain.port, "/v1/stream", {start_8k}, frames, {end_msg}));
    }
    REQUIRE(want.size() >= 8);
    served s(cfg);
    // Right after the end, the close_notify comes with it (the server's read of the end takes
    // it along, and its close handshake meets it); after the pong it comes alone, while the
    // server is still sending finals (it then frames the rest itself).
    for (const bool after_pong : {false, true}) {
      CAPTURE(after_pong);
      const auto half_closes = s.server->ws_tls_half_closes();
      const auto got = wss_close_notify(s.port, c.cert, frames, 0, after_pong);
      CHECK(got.version == "TLSv1.3");
      CHECK_MESSAGE(got.error.empty(), got.error);
      CHECK(got.finals == want);
      CHECK(got.last_type == "end");
      CHECK(got.close_code == 1000);
      CHECK(got.server_close_notify);
      if (after_pong) CHECK(s.server->ws_tls_half_closes() == half_closes + 1);
    }
    CHECK(http_request_tls(s.port, c.cert) == 200);
  }

  TEST_CASE("wss over TLS 1.2: a close_notify read before the stream is finished ends it as the client leaving (RFC 5246 7.2.1: no half-close) - either way it is answered with the server's and the server serves on") {
    const auto frames = call_four_times();  // as in the TLS 1.3 case: results still to come after the end
    temp_dir dir;
    const auto c = make_self_signed(dir, "srv", 16);
    auto cfg = tls_config(c);
    cfg.server.ws_max_buffered_audio_ms = backlog_mark_ms;
    served s(cfg);
    for (const bool after_pong : {false, true}) {
      CAPTURE(after_pong);
      const auto got = wss_close_notify(s.port, c.cert, frames, TLS1_2_VERSION, after_pong);
      CHECK(got.version == "TLSv1.2");
      CHECK_FALSE(got.timed_out);  // the server ended the connection
      // The call, once ended, as /v1/calls lists it (the newest first).
      json call;
      REQUIRE(poll_until([&] {
        const auto j = json::parse(https_client(s.port, c.cert).get("/v1/calls").body, nullptr, false);
        if (j.is_discarded() || j["calls"].size() != (after_pong ? 2u : 1u)) return false;
        call = j["calls"][0];
        return !call["live"].get<bool>();
      }));
      MESSAGE("TLS 1.2 close_notify after the end: last message \"" << got.last_type << "\", call ended \""
                                                                     << call["end_reason"].get<std::string>() << "\"");
      if (got.last_type == "end") {
        // Finished before the close_notify was read: the close handshake met it.
        CHECK(call["end_reason"] == "done");
        CHECK(got.close_code == 1000);
      } else {
        CHECK(call["end_reason"] == "client left");
      }
      CHECK(got.server_close_notify);  // answered with the server's own, either way
    }
    CHECK(s.server->ws_tls_half_closes() == 0);
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
