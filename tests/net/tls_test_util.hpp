#pragma once
// Self-signed certificates made at test time with the openssl command line, and blocking Beast
// TLS clients (https and wss) that verify the server against such a certificate as their CA.
#include "tests/net/net_test_util.hpp"

#include "net/hex.hpp"

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <memory>
#include <string>

#include "tests/common/audio_tools.hpp"
#include "tests/common/command.hpp"

namespace sluice::test {

namespace ssl = asio::ssl;

// Runs a shell command; returns its standard output and exit status.
inline std::pair<std::string, int> run_command(const std::string& cmd) {
  auto r = run_capture(cmd);
  return {std::move(r.out), r.status};
}

// A self-signed EC certificate for localhost (CN and subjectAltName) with the given serial,
// valid one day, written as <stem>.crt and <stem>.key (unencrypted) into `dir`.
struct self_signed {
  std::string cert, key;
};
inline self_signed make_self_signed(const temp_dir& dir, const std::string& stem, int serial) {
  self_signed c{dir.file(stem + ".crt"), dir.file(stem + ".key")};
  const auto [out, rc] = run_command(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=DNS:localhost -set_serial " + std::to_string(serial) + " -keyout '" + c.key +
      "' -out '" + c.cert + "' 2>&1");
  REQUIRE_MESSAGE(rc == 0, "openssl req failed: " << out);
  return c;
}

// The SHA-256 fingerprint of a PEM certificate file as the openssl command line computes it,
// lower-case hex without colons (an independent reference for what a client sees).
inline std::string openssl_fingerprint(const std::string& cert_file) {
  const auto [out, rc] = run_command("openssl x509 -noout -fingerprint -sha256 -in '" + cert_file + "'");
  REQUIRE(rc == 0);
  const auto eq = out.find('=');
  REQUIRE(eq != std::string::npos);
  std::string hex;
  for (char ch : out.substr(eq + 1))
    if (std::isxdigit(static_cast<unsigned char>(ch))) hex += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return hex;
}

// SHA-256 of the certificate the peer of an OpenSSL connection presented, lower-case hex.
inline std::string peer_fingerprint(SSL* ssl_handle) {
  X509* cert = SSL_get1_peer_certificate(ssl_handle);
  REQUIRE(cert != nullptr);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  REQUIRE(X509_digest(cert, EVP_sha256(), md, &n) == 1);
  X509_free(cert);
  return net::to_hex(md, n);
}

// A client context that trusts exactly `ca_file` and checks the name "localhost".
inline std::unique_ptr<ssl::context> client_context(const std::string& ca_file) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  ctx->load_verify_file(ca_file);
  ctx->set_verify_mode(ssl::verify_peer);
  return ctx;
}

// One https connection (keep-alive): connect, verify, then any number of requests.
struct https_client {
  asio::io_context ioc;
  std::unique_ptr<ssl::context> ctx;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> stream;

  https_client(uint16_t port, const std::string& ca_file) : ctx(client_context(ca_file)) {
    stream = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ioc, *ctx);
    REQUIRE(SSL_set_tlsext_host_name(stream->native_handle(), "localhost") == 1);
    stream->set_verify_callback(ssl::host_name_verification("localhost"));
    beast::get_lowest_layer(*stream).connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    stream->handshake(ssl::stream_base::client);
  }

  http_reply get(const std::string& target) {
    http::request<http::string_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "localhost");
    http::write(*stream, req);
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(*stream, buf, res);
    return {static_cast<int>(res.result_int()), res.body(), std::string(res[http::field::content_type])};
  }

  std::string fingerprint() { return peer_fingerprint(stream->native_handle()); }
};

// A wss session like ws_session() (net_test_util.hpp): start, audio, end, read until close.
inline ws_result wss_session(uint16_t port, const std::string& ca_file, const std::string& path,
                             const std::vector<std::string>& texts_before, const std::vector<std::vector<uint8_t>>& frames,
                             const std::vector<std::string>& texts_after) {
  asio::io_context ioc;
  auto ctx = client_context(ca_file);
  websocket::stream<beast::ssl_stream<tcp::socket>> ws(ioc, *ctx);
  REQUIRE(SSL_set_tlsext_host_name(ws.next_layer().native_handle(), "localhost") == 1);
  ws.next_layer().set_verify_callback(ssl::host_name_verification("localhost"));
  beast::get_lowest_layer(ws).connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  ws.next_layer().handshake(ssl::stream_base::client);
  ws.handshake("localhost", path);
  return exchange(ws, texts_before, frames, texts_after);
}

}  // namespace sluice::test
