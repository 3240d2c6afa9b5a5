// The webhook over https and signed (net/calls/webhook.hpp): an in-process Beast TLS server with
// certificates made by the openssl command line captures what arrives (the request and the SNI
// name the client sent). The webhook must verify the certificate's chain and its host name (DNS
// or IP entry) and send SNI only for names; the signature header must equal the HMAC-SHA256
// that `openssl dgst -hmac` computes over "<t>.<body>"; a served engine with [calls]
// webhook_url, webhook_ca_file and webhook_secret_file posts a WebSocket call's document so, and
// counts it in /metrics (read back with prometheus_client's parser).
#include "tests/net/tls_test_util.hpp"

#include <openssl/ssl.h>

#include <chrono>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "net/calls/webhook.hpp"
#include "tests/net/prometheus_samples.hpp"

using namespace sluice;
using namespace sluice::test;
using namespace sluice::net::calls;

namespace {

struct captured {
  http::request<http::string_body> req;
  std::string sni;        // "" when the client sent none
  std::string client_fp;  // SHA-256 of the client's certificate; "" when it sent none
};

// A one-thread blocking https server on a free loopback port; every request is answered 200.
// With `client_ca` it asks for a client certificate and accepts only one that CA vouches for
// (mutual TLS, as OpenSSL's verify_fail_if_no_peer_cert does it).
class tls_capture_server {
 public:
  tls_capture_server(const std::string& cert, const std::string& key, const std::string& client_ca = {})
      : ctx_(ssl::context::tls_server), acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    ctx_.use_certificate_chain_file(cert);
    ctx_.use_private_key_file(key, ssl::context::pem);
    if (!client_ca.empty()) {
      ctx_.load_verify_file(client_ca);
      ctx_.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    }
    thread_ = std::thread([this] { serve(); });
  }
  ~tls_capture_server() {
    stopping_ = true;
    asio::io_context ioc;
    tcp::socket poke(ioc);
    beast::error_code ec;
    poke.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port()), ec);
    thread_.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  std::vector<captured> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  int failed_handshakes() {
    std::lock_guard lock(mu_);
    return failed_handshakes_;
  }

 private:
  void serve() {
    for (;;) {
      tcp::socket s(ioc_);
      beast::error_code ec;
      acceptor_.accept(s, ec);
      if (ec || stopping_) return;
      ssl::stream<tcp::socket&> tls(s, ctx_);
      tls.handshake(ssl::stream_base::server, ec);
      if (ec) {
        std::lock_guard lock(mu_);
        ++failed_handshakes_;
        continue;
      }
      captured c;
      if (const char* name = SSL_get_servername(tls.native_handle(), TLSEXT_NAMETYPE_host_name)) c.sni = name;
      if (X509* peer = SSL_get1_peer_certificate(tls.native_handle())) {  // the client's, on this side
        X509_free(peer);
        c.client_fp = peer_fingerprint(tls.native_handle());
      }
      beast::flat_buffer buf;
      http::read(tls, buf, c.req, ec);
      if (ec) continue;
      {
        std::lock_guard lock(mu_);
        requests_.push_back(std::move(c));
      }
      http::response<http::string_body> res{http::status::ok, 11};
      res.body() = "{}";
      res.prepare_payload();
      http::write(tls, res, ec);
      tls.shutdown(ec);
    }
  }

  asio::io_context ioc_;
  ssl::context ctx_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<captured> requests_;
  int failed_handshakes_ = 0;
};

// A self-signed certificate whose only subjectAltName is the IP address 127.0.0.1.
self_signed make_ip_certificate(const temp_dir& dir) {
  self_signed c{dir.file("ip.crt"), dir.file("ip.key")};
  const auto [out, rc] = run_command(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=loopback "
      "-addext subjectAltName=IP:127.0.0.1 -keyout '" + c.key + "' -out '" + c.cert + "' 2>&1");
  REQUIRE_MESSAGE(rc == 0, "openssl req failed: " << out);
  return c;
}

struct outcome {
  bool delivered = false;
  int attempts = 0;
  std::string why;
};

// Ends one call in `reg` with a webhook of `o` and returns how its posting ended.
outcome post_one_call(webhook::options o) {
  call_registry reg;
  std::promise<outcome> done;
  o.timeout = std::chrono::seconds(30);
  o.retries = 0;
  o.on_done = [&](const std::string&, bool ok, int attempts, const std::string& why) {
    done.set_value({ok, attempts, why});
  };
  auto hook = webhook::start(reg, o);
  REQUIRE_MESSAGE(hook.has_value(), (hook ? "" : hook.error().message));
  call_start s;
  s.source = "audiosocket";
  s.tenant = "acme";
  s.channel_labels = {"caller"};
  const auto id = reg.begin(s);
  reg.end(id, "hangup");
  return done.get_future().get();
}

// The lower-case hex HMAC-SHA256 of `text` under `key`, as the openssl command line computes it.
std::string openssl_hmac(const temp_dir& dir, const std::string& key, const std::string& text) {
  const auto file = dir.file("signed.txt");
  {
    std::ofstream out(file, std::ios::binary);
    out << text;
  }
  const auto [out, rc] = run_command("openssl dgst -sha256 -hmac '" + key + "' -r '" + file + "'");
  REQUIRE(rc == 0);
  return out.substr(0, out.find(' '));
}

// X-Sluice-Signature split into its t and v1 (both empty when it is not "t=...,v1=...").
struct signature_parts {
  std::string t, v1;
};
signature_parts split_signature(const http::request<http::string_body>& req) {
  const std::string sig(req["X-Sluice-Signature"]);
  const auto comma = sig.find(",v1=");
  if (sig.rfind("t=", 0) != 0 || comma == std::string::npos) return {};
  return {sig.substr(2, comma - 2), sig.substr(comma + 4)};
}

}  // namespace

TEST_SUITE("calls webhook tls") {
  TEST_CASE("https: posted to a server whose certificate chains to the CA file and names the host, with SNI") {
    temp_dir dir;
    const auto cert = make_self_signed(dir, "server", 1);
    tls_capture_server server(cert.cert, cert.key);
    webhook::options o;
    o.url = "https://localhost:" + std::to_string(server.port()) + "/hooks/calls?x=1";
    o.ca_file = cert.cert;
    const auto r = post_one_call(o);
    CHECK_MESSAGE(r.delivered, r.why);
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 1);
    CHECK(reqs[0].sni == "localhost");
    CHECK(std::string(reqs[0].req.target()) == "/hooks/calls?x=1");
    CHECK(std::string(reqs[0].req[http::field::host]) == "localhost:" + std::to_string(server.port()));
    const auto j = nlohmann::json::parse(reqs[0].req.body());
    CHECK(j["end_reason"] == "hangup");
    CHECK(j["tenant"] == "acme");
    // No secret, no signature.
    CHECK(reqs[0].req.find("X-Sluice-Signature") == reqs[0].req.end());
  }

  TEST_CASE("https: a certificate the CA file does not vouch for gets no request, and the failure says why") {
    temp_dir dir;
    const auto cert = make_self_signed(dir, "server", 1);
    const auto other = make_self_signed(dir, "other", 2);
    tls_capture_server server(cert.cert, cert.key);
    webhook::options o;
    o.url = "https://localhost:" + std::to_string(server.port()) + "/";
    o.ca_file = other.cert;
    const auto r = post_one_call(o);
    CHECK_FALSE(r.delivered);
    CHECK(r.attempts == 1);
    CHECK_MESSAGE(r.why.find("tls handshake: certificate verify failed") != std::string::npos, r.why);
    CHECK_MESSAGE(r.why.find("self-signed certificate") != std::string::npos, r.why);
    CHECK(server.requests().empty());
    // The system's CAs do not vouch for a self-signed test certificate either.
    o.ca_file.clear();
    const auto sys = post_one_call(o);
    CHECK_FALSE(sys.delivered);
    CHECK(sys.why.find("certificate verify failed") != std::string::npos);
    CHECK(server.requests().empty());
  }

  TEST_CASE("https: a trusted certificate that does not name the url's host is refused") {
    temp_dir dir;
    const auto cert = make_self_signed(dir, "server", 1);  // DNS:localhost only
    tls_capture_server server(cert.cert, cert.key);
    webhook::options o;
    o.url = "https://127.0.0.1:" + std::to_string(server.port()) + "/";
    o.ca_file = cert.cert;
    const auto r = post_one_call(o);
    CHECK_FALSE(r.delivered);
    CHECK_MESSAGE(r.why.find("does not name 127.0.0.1") != std::string::npos, r.why);
    CHECK(server.requests().empty());
  }

  TEST_CASE("https to an IP address: the certificate's IP entry is checked and no SNI is sent") {
    temp_dir dir;
    const auto cert = make_ip_certificate(dir);
    tls_capture_server server(cert.cert, cert.key);
    webhook::options o;
    o.url = "https://127.0.0.1:" + std::to_string(server.port()) + "/in";
    o.ca_file = cert.cert;
    const auto r = post_one_call(o);
    CHECK_MESSAGE(r.delivered, r.why);
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 1);
    CHECK(reqs[0].sni.empty());
    // The same certificate does not name "localhost".
    o.url = "https://localhost:" + std::to_string(server.port()) + "/in";
    const auto by_name = post_one_call(o);
    CHECK_FALSE(by_name.delivered);
    CHECK(by_name.why.find("does not name localhost") != std::string::npos);
    CHECK(server.requests().size() == 1);
  }

  TEST_CASE("a signed POST: X-Sluice-Signature is t and openssl's HMAC-SHA256 of t.body under the secret") {
    temp_dir dir;
    const auto cert = make_self_signed(dir, "server", 1);
    tls_capture_server server(cert.cert, cert.key);
    webhook::options o;
    o.url = "https://localhost:" + std::to_string(server.port()) + "/signed";
    o.ca_file = cert.cert;
    o.secret = "whsec-3f1c9a-not-a-real-key";
    const auto before = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    const auto r = post_one_call(o);
    const auto after = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
    REQUIRE_MESSAGE(r.delivered, r.why);
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 1);
    const auto sig = split_signature(reqs[0].req);
    REQUIRE_FALSE(sig.t.empty());
    const int64_t ts = std::stoll(sig.t);
    CHECK(ts >= before);
    CHECK(ts <= after);
    const std::string body = reqs[0].req.body();
    CHECK(sig.v1 == openssl_hmac(dir, o.secret, sig.t + "." + body));
    // A body changed by one byte would not verify.
    CHECK(sig.v1 != openssl_hmac(dir, o.secret, sig.t + "." + body + " "));
  }

  TEST_CASE("the secret file: trailing whitespace dropped, an empty or missing file refused by name") {
    temp_dir dir;
    const auto good = dir.file("secret");
    std::ofstream(good) << "k3y with inner space\n\n";
    const auto k = read_webhook_secret(good);
    REQUIRE(k.has_value());
    CHECK(*k == "k3y with inner space");
    const auto empty = dir.file("empty");
    std::ofstream(empty) << " \n";
    const auto e = read_webhook_secret(empty);
    REQUIRE_FALSE(e.has_value());
    CHECK(e.error().message.find("holds no key") != std::string::npos);
    const auto missing = read_webhook_secret(dir.file("none"));
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().message.find(dir.file("none")) != std::string::npos);
  }

  TEST_CASE("a server without a webhook has no webhook metrics, one with a webhook exports zeros before any call") {
    {
      served plain;
      const auto m = http_request(plain.port, http::verb::get, "/metrics");
      REQUIRE(m.status == 200);
      CHECK(m.body.find("sluice_webhook") == std::string::npos);
    }
    config::sluice_config cfg;
    cfg.calls.webhook_url = "http://127.0.0.1:9/never";
    served s(cfg);
    const auto m = http_request(s.port, http::verb::get, "/metrics");
    REQUIRE(m.status == 200);
    CHECK(m.body.find("sluice_webhook_calls_total{outcome=\"delivered\"} 0\n") != std::string::npos);
    CHECK(m.body.find("sluice_webhook_attempts_total 0\n") != std::string::npos);
  }

  TEST_CASE("mutual TLS: a server that asks for a client certificate gets webhook_cert_file's and the post is delivered - without one, or with one it does not trust, no request gets through") {
    temp_dir dir;
    const auto server_cert = make_self_signed(dir, "server", 1);
    const auto client = make_self_signed(dir, "client", 3);  // self-signed: its own CA for the server
    const auto stranger = make_self_signed(dir, "stranger", 4);
    tls_capture_server server(server_cert.cert, server_cert.key, client.cert);
    webhook::options o;
    o.url = "https://localhost:" + std::to_string(server.port()) + "/hooks";
    o.ca_file = server_cert.cert;

    const auto none = post_one_call(o);  // no client certificate
    CHECK_FALSE(none.delivered);
    CHECK(server.requests().empty());
    // Over TLS 1.3 the client's handshake ends before the server has checked its certificate:
    // the client may give up before the server's thread counts the failure.
    CHECK(poll_until([&] { return server.failed_handshakes() == 1; }, std::chrono::seconds(10)));

    o.cert_file = stranger.cert;
    o.key_file = stranger.key;
    const auto untrusted = post_one_call(o);
    CHECK_FALSE(untrusted.delivered);
    CHECK(server.requests().empty());
    CHECK(poll_until([&] { return server.failed_handshakes() == 2; }, std::chrono::seconds(10)));

    o.cert_file = client.cert;
    o.key_file = client.key;
    const auto r = post_one_call(o);
    CHECK_MESSAGE(r.delivered, r.why);
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 1);
    // The certificate the server saw is the client's file, by openssl's own fingerprint.
    CHECK(reqs[0].client_fp == openssl_fingerprint(client.cert));
    CHECK(nlohmann::json::parse(reqs[0].req.body())["end_reason"] == "hangup");
  }

  TEST_CASE("webhook client certificate settings: both files or neither, https only, readable, and the key of that certificate") {
    temp_dir dir;
    const auto a = make_self_signed(dir, "a", 5);
    const auto b = make_self_signed(dir, "b", 6);
    config::calls_config c;
    c.webhook_url = "https://hooks.example/x";
    c.webhook_cert_file = a.cert;
    CHECK(c.check().find("webhook_key_file") != std::string::npos);
    c.webhook_key_file = a.key;
    CHECK(c.check().empty());
    c.webhook_url = "http://hooks.example/x";
    CHECK(c.check().find("webhook_cert_file is set but webhook_url is not https://") != std::string::npos);

    call_registry reg;
    webhook::options o;
    o.url = "https://hooks.example/x";
    auto refused = [&](const std::string& names) {
      auto hook = webhook::start(reg, o);
      REQUIRE_FALSE(hook.has_value());
      CHECK_MESSAGE(hook.error().message.find(names) != std::string::npos, hook.error().message);
    };
    o.cert_file = a.cert;
    refused("needs both its certificate and its key file");
    o.key_file = b.key;  // another certificate's key
    refused("the client key " + b.key + " is not the key of " + a.cert);
    o.key_file = dir.file("missing.key");
    refused("cannot read the client key " + dir.file("missing.key"));
    o.cert_file = dir.file("missing.crt");
    o.key_file = a.key;
    refused("cannot read the client certificate " + dir.file("missing.crt"));
    o.cert_file = a.cert;
    o.url = "http://hooks.example/x";
    refused("not https://");
    o.url = "https://hooks.example/x";
    auto ok = webhook::start(reg, o);
    CHECK_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
  }

  TEST_CASE("webhook settings: a CA file needs an https url, an unreadable CA file is refused at start") {
    config::calls_config c;
    c.webhook_url = "http://hooks.example/x";
    c.webhook_ca_file = "/etc/ssl/certs/ca-certificates.crt";
    CHECK(c.check().find("webhook_ca_file") != std::string::npos);
    c.webhook_url = "https://hooks.example/x";
    CHECK(c.check().empty());
    c.webhook_url = "ftp://hooks.example/x";
    CHECK_FALSE(c.check().empty());
    call_registry reg;
    webhook::options o;
    o.url = "https://hooks.example/x";
    o.ca_file = "/nonexistent/ca.pem";
    auto hook = webhook::start(reg, o);
    REQUIRE_FALSE(hook.has_value());
    CHECK(hook.error().message.find("/nonexistent/ca.pem") != std::string::npos);
  }

  TEST_CASE("a served engine posts a WebSocket call's document over https, signed with the secret file's key") {
    temp_dir dir;
    const auto cert = make_self_signed(dir, "server", 1);
    tls_capture_server receiver(cert.cert, cert.key);
    const auto secret_file = dir.file("webhook.secret");
    std::ofstream(secret_file) << "served-secret\n";
    config::sluice_config cfg;
    cfg.calls.webhook_url = "https://localhost:" + std::to_string(receiver.port()) + "/calls";
    cfg.calls.webhook_ca_file = cert.cert;
    cfg.calls.webhook_secret_file = secret_file;
    cfg.calls.webhook_retries = 0;
    std::vector<captured> reqs;
    {
      served s(cfg);
      auto r = ws_session(s.port, "/v1/stream",
                          {R"({"type":"start","sample_rate":8000,"encoding":"pcm_s16le","channels":1})"},
                          call_pcm16_frames(), {R"({"type":"end"})"});
      REQUIRE(r.close_code == 1000);
      // A scrape once it is delivered: the counters as prometheus_client's parser reads them.
      REQUIRE(poll_until([&] { return s.server->webhook()->stats().delivered == 1; }));
      const auto metrics = http_request(s.port, http::verb::get, "/metrics");
      REQUIRE(metrics.status == 200);
      CHECK(prometheus_samples(dir, metrics.body, "'sluice_webhook'", "outcome") ==
            "counter sluice_webhook_calls_total delivered 1\n"
            "counter sluice_webhook_calls_total given_up 0\n"
            "counter sluice_webhook_calls_total dropped 0\n"
            "counter sluice_webhook_calls_total abandoned 0\n"
            "counter sluice_webhook_attempts_total - 1\n");
      // The stop drains the webhook's queue ([calls] webhook_drain_ms, 5 s by default): the
      // call, ended when its stream closed, is posted before the server is gone.
      s.server->stop();
      reqs = receiver.requests();
      CHECK(s.server->webhook()->stats().delivered == 1);
      CHECK(s.server->webhook()->stats().abandoned == 0);
    }
    REQUIRE(reqs.size() == 1);
    const auto j = nlohmann::json::parse(reqs[0].req.body());
    CHECK(j["source"] == "stream");
    CHECK(j["end_reason"] == "done");
    REQUIRE(j["channels"].size() == 1);
    CHECK_FALSE(j["channels"][0]["finals"].empty());
    const auto sig = split_signature(reqs[0].req);
    REQUIRE_FALSE(sig.t.empty());
    CHECK(sig.v1 == openssl_hmac(dir, "served-secret", sig.t + "." + reqs[0].req.body()));
  }
}
