#include "net/tls_context.hpp"

#include <fstream>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include "net/hex.hpp"

namespace sluice::net {

namespace ssl = boost::asio::ssl;

namespace {

// The file must be there and readable: OpenSSL's own message for a missing file is vague.
result<void> check_readable(const char* key, const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail(errc::io, "server." + std::string(key) + " = \"" + path + "\": cannot open the file");
  return {};
}

// OpenSSL's reason for the last failure (its error queue), emptied so it does not leak into
// the next call on this thread.
std::string openssl_reason(const boost::system::error_code& ec) {
  std::string why = ec.message();
  if (const unsigned long e = ERR_peek_last_error(); e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    why = buf;
  }
  ERR_clear_error();
  return why;
}

}  // namespace

result<std::shared_ptr<ssl::context>> load_tls_context(const config::server_config& cfg) {
  if (auto ok = check_readable("tls_cert_file", cfg.tls_cert_file); !ok) return tl::unexpected(ok.error());
  if (auto ok = check_readable("tls_key_file", cfg.tls_key_file); !ok) return tl::unexpected(ok.error());
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  // No SSLv2/3, TLS 1.0/1.1 (RFC 8996), no compression (CRIME); the minimum from the config.
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::no_compression |
                   ssl::context::single_dh_use);
  const int min_version = cfg.tls_min_version == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION;
  if (SSL_CTX_set_min_proto_version(ctx->native_handle(), min_version) != 1)
    return fail(errc::internal, "TLS: cannot set the minimum version " + cfg.tls_min_version);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(cfg.tls_cert_file, ec);
  if (ec)
    return fail(errc::invalid_config,
                "server.tls_cert_file = \"" + cfg.tls_cert_file + "\" is not a PEM certificate chain: " + openssl_reason(ec));
  ctx->use_private_key_file(cfg.tls_key_file, ssl::context::pem, ec);
  if (ec)
    return fail(errc::invalid_config, "server.tls_key_file = \"" + cfg.tls_key_file +
                                          "\" is not an unencrypted PEM private key matching server.tls_cert_file: " +
                                          openssl_reason(ec));
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1)
    return fail(errc::invalid_config, "server.tls_key_file = \"" + cfg.tls_key_file +
                                          "\" does not match the certificate in server.tls_cert_file: " +
                                          openssl_reason({}));
  return ctx;
}

std::string tls_fingerprint(const ssl::context& ctx) {
  X509* cert = SSL_CTX_get0_certificate(const_cast<ssl::context&>(ctx).native_handle());
  if (!cert) return {};
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (X509_digest(cert, EVP_sha256(), md, &n) != 1) return {};
  return to_hex(md, n);
}

result<std::unique_ptr<tls_context_store>> tls_context_store::create(const config::server_config& cfg) {
  std::unique_ptr<tls_context_store> s(new tls_context_store(cfg));
  s->cert_stamp_ = stamp_of(cfg.tls_cert_file);
  s->key_stamp_ = stamp_of(cfg.tls_key_file);
  auto ctx = load_tls_context(cfg);
  if (!ctx) return tl::unexpected(ctx.error());
  s->ctx_ = std::move(*ctx);
  spdlog::info("tls: serving {} (sha256 {})", cfg.tls_cert_file, tls_fingerprint(*s->ctx_));
  return s;
}

std::shared_ptr<ssl::context> tls_context_store::current() const {
  std::lock_guard lock(mutex_);
  return ctx_;
}

result<void> tls_context_store::reload() {
  // Built outside the lock: new connections go on with the old context meanwhile.
  auto ctx = load_tls_context(cfg_);
  if (!ctx) {
    spdlog::error("tls: reload failed, the previous certificate stays: {}", ctx.error().message);
    return tl::unexpected(ctx.error());
  }
  spdlog::info("tls: reloaded {} (sha256 {}) for new connections", cfg_.tls_cert_file, tls_fingerprint(**ctx));
  std::lock_guard lock(mutex_);
  ctx_ = std::move(*ctx);
  return {};
}

bool tls_context_store::reload_if_changed() {
  const auto cert = stamp_of(cfg_.tls_cert_file), key = stamp_of(cfg_.tls_key_file);
  {
    std::lock_guard lock(mutex_);
    if (cert == cert_stamp_ && key == key_stamp_) return false;
    cert_stamp_ = cert;
    key_stamp_ = key;
  }
  (void)reload();
  return true;
}

tls_context_store::stamp tls_context_store::stamp_of(const std::string& path) {
  std::error_code ec;
  stamp s;
  s.mtime = std::filesystem::last_write_time(path, ec);
  if (ec) return {};
  s.size = std::filesystem::file_size(path, ec);
  if (ec) return {};
  return s;
}

}  // namespace sluice::net
