#include "net/auth/key_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "net/hex.hpp"

namespace sluice::net::auth {

namespace {

constexpr std::string_view key_prefix = "sk_";
constexpr char key_separator = '_';
constexpr int record_fields = 5;
// Owner read/write only: the file holds no secrets, but who may use the server is its business.
constexpr mode_t keys_file_mode = 0600;


int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // lower case only: one spelling per key
}

// Exactly 2*N lower-case hex digits into `out`.
template <std::size_t N>
bool from_hex(std::string_view s, std::array<uint8_t, N>& out) {
  if (s.size() != 2 * N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

bool is_hex(std::string_view s, std::size_t digits) {
  if (s.size() != digits) return false;
  for (char c : s)
    if (hex_value(c) < 0) return false;
  return true;
}

std::array<uint8_t, key_hash_bytes> hash_key(const std::array<uint8_t, key_salt_bytes>& salt, std::string_view key) {
  std::array<uint8_t, key_hash_bytes> out{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned int n = 0;
  // A failure here leaves `out` zero, which no stored hash of a real key equals.
  if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 && EVP_DigestUpdate(ctx, salt.data(), salt.size()) == 1 &&
      EVP_DigestUpdate(ctx, key.data(), key.size()) == 1)
    EVP_DigestFinal_ex(ctx, out.data(), &n);
  EVP_MD_CTX_free(ctx);
  return out;
}

// The id inside `sk_<id>_<secret>`, when the key has that shape.
std::optional<std::string_view> key_id_of(std::string_view key) {
  if (key.size() != key_prefix.size() + 2 * key_id_bytes + 1 + 2 * key_secret_bytes) return std::nullopt;
  if (key.substr(0, key_prefix.size()) != key_prefix) return std::nullopt;
  const auto id = key.substr(key_prefix.size(), 2 * key_id_bytes);
  const auto rest = key.substr(key_prefix.size() + id.size());
  if (!is_hex(id, 2 * key_id_bytes) || rest[0] != key_separator || !is_hex(rest.substr(1), 2 * key_secret_bytes))
    return std::nullopt;
  return id;
}

}  // namespace

result<new_key> make_key(const std::string& tenant, scope_set scopes) {
  if (!valid_tenant(tenant))
    return fail(errc::invalid_argument, "tenant \"" + tenant + "\": " + std::string(tenant_rule));
  if (scopes.empty()) return fail(errc::invalid_argument, "a key needs at least one scope");
  std::array<uint8_t, key_id_bytes> id{};
  std::array<uint8_t, key_secret_bytes> secret{};
  new_key out;
  if (RAND_bytes(id.data(), static_cast<int>(id.size())) != 1 ||
      RAND_bytes(secret.data(), static_cast<int>(secret.size())) != 1 ||
      RAND_bytes(out.record.salt.data(), static_cast<int>(out.record.salt.size())) != 1)
    return fail(errc::internal, "OpenSSL RAND_bytes failed: no randomness to make a key");
  out.record.id = to_hex(id.data(), id.size());
  out.record.tenant = tenant;
  out.record.scopes = scopes;
  out.key = std::string(key_prefix) + out.record.id + key_separator + to_hex(secret.data(), secret.size());
  out.record.hash = hash_key(out.record.salt, out.key);
  OPENSSL_cleanse(secret.data(), secret.size());
  return out;
}

std::string format_record(const key_record& r) {
  return r.id + " " + r.tenant + " " + r.scopes.to_string() + " " + to_hex(r.salt.data(), r.salt.size()) + " " +
         to_hex(r.hash.data(), r.hash.size());
}

result<void> append_record(const std::string& path, const key_record& r) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, keys_file_mode);
  if (fd < 0) return fail(errc::io, "cannot open keys file " + path + " for writing");
  const std::string line = format_record(r) + "\n";
  const auto written = ::write(fd, line.data(), line.size());
  const bool ok = written == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return fail(errc::io, "cannot write keys file " + path);
  return {};
}

result<key_store> key_store::parse(std::string_view text, std::string_view source) {
  key_store out;
  std::istringstream in{std::string(text)};
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    if (f.empty()) continue;
    const std::string where = std::string(source) + ":" + std::to_string(n) + ": ";
    if (static_cast<int>(f.size()) != record_fields)
      return fail(errc::corrupt, where + "expected 5 fields (id tenant scopes salt hash), found " + std::to_string(f.size()));
    key_record r;
    r.id = f[0];
    if (!is_hex(r.id, 2 * key_id_bytes)) return fail(errc::corrupt, where + "the id must be 16 lower-case hex digits");
    if (!valid_tenant(f[1])) return fail(errc::corrupt, where + "tenant \"" + f[1] + "\": " + std::string(tenant_rule));
    r.tenant = f[1];
    auto scopes = scope_set::parse(f[2]);
    if (!scopes) return fail(errc::corrupt, where + scopes.error().message);
    r.scopes = *scopes;
    if (!from_hex(f[3], r.salt)) return fail(errc::corrupt, where + "the salt must be 32 lower-case hex digits");
    if (!from_hex(f[4], r.hash)) return fail(errc::corrupt, where + "the hash must be 64 lower-case hex digits");
    if (!out.by_id_.emplace(r.id, r).second) return fail(errc::corrupt, where + "key id " + r.id + " appears twice");
  }
  return out;
}

result<key_store> key_store::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(errc::io, "cannot open keys file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

std::optional<principal> key_store::authenticate(std::string_view presented) const {
  const auto id = key_id_of(presented);
  if (!id) return std::nullopt;
  const auto it = by_id_.find(std::string(*id));
  // The id is public (it is in the file and the logs); only the secret part needs the constant
  // time comparison below.
  if (it == by_id_.end()) return std::nullopt;
  const auto& r = it->second;
  const auto h = hash_key(r.salt, presented);
  if (CRYPTO_memcmp(h.data(), r.hash.data(), h.size()) != 0) return std::nullopt;
  return principal{r.tenant, r.id, r.scopes};
}

}  // namespace sluice::net::auth
