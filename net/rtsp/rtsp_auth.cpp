#include "net/rtsp/rtsp_auth.hpp"

#include <cctype>
#include <cstdio>
#include <map>
#include <vector>

#include <openssl/evp.h>

#include "net/hex.hpp"

namespace sluice::net::rtsp {

namespace {

constexpr std::size_t max_param_bytes = 1024;  // a realm, nonce or opaque longer than this is refused

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 3986 2.1 percent-decoding; a '%' not followed by two hex digits stays as it is.
std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

bool is_token_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || (c && std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos);
}

// The scheme and auth-params of one challenge: `Digest realm="a", nonce="b", qop="auth"`.
// Quoted values may hold escaped characters (RFC 7230 3.2.6). False for text that is not one.
bool parse_one(std::string_view v, std::string& scheme, std::map<std::string, std::string>& params) {
  std::size_t i = 0;
  auto skip_ws = [&] {
    while (i < v.size() && (v[i] == ' ' || v[i] == '\t')) ++i;
  };
  skip_ws();
  const auto s0 = i;
  while (i < v.size() && is_token_char(v[i])) ++i;
  if (i == s0) return false;
  scheme = lower(v.substr(s0, i - s0));
  while (i < v.size()) {
    skip_ws();
    if (i < v.size() && v[i] == ',') {
      ++i;
      continue;
    }
    const auto k0 = i;
    while (i < v.size() && is_token_char(v[i])) ++i;
    if (i == k0) return false;
    const auto key = lower(v.substr(k0, i - k0));
    skip_ws();
    if (i >= v.size() || v[i] != '=') return false;
    ++i;
    skip_ws();
    std::string value;
    if (i < v.size() && v[i] == '"') {
      ++i;
      bool closed = false;
      while (i < v.size()) {
        char c = v[i++];
        if (c == '\\' && i < v.size()) c = v[i++];
        else if (c == '"') {
          closed = true;
          break;
        }
        value += c;
        if (value.size() > max_param_bytes) return false;
      }
      if (!closed) return false;
    } else {
      const auto v0 = i;
      while (i < v.size() && is_token_char(v[i])) ++i;
      value = std::string(v.substr(v0, i - v0));
      if (value.size() > max_param_bytes) return false;
    }
    params[key] = std::move(value);
  }
  return true;
}

std::string base64(std::string_view in) {
  std::vector<unsigned char> out(4 * ((in.size() + 2) / 3) + 1);
  const int n = EVP_EncodeBlock(out.data(), reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  return std::string(reinterpret_cast<const char*>(out.data()), n > 0 ? static_cast<std::size_t>(n) : 0);
}

// A quoted-string of a header value: '"' and '\' escaped.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

url_credentials split_credentials(std::string_view url) {
  url_credentials out;
  out.wire = out.redacted = std::string(url);
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return out;
  const auto auth_start = scheme_end + 3;
  const auto path_start = url.find('/', auth_start);
  const auto authority = url.substr(auth_start, path_start == std::string_view::npos ? std::string_view::npos
                                                                                     : path_start - auth_start);
  const auto at = authority.rfind('@');
  if (at == std::string_view::npos) return out;
  const auto userinfo = authority.substr(0, at);
  const auto colon = userinfo.find(':');
  out.user = percent_decode(userinfo.substr(0, colon));
  if (colon != std::string_view::npos) out.password = percent_decode(userinfo.substr(colon + 1));
  const std::string head(url.substr(0, auth_start));
  const std::string tail(url.substr(auth_start + at + 1));
  out.wire = head + tail;
  out.redacted = head + std::string(userinfo.substr(0, colon)) + (colon != std::string_view::npos ? ":***" : "") + "@" + tail;
  return out;
}

auth_challenge parse_challenge(const header_list& headers) {
  auth_challenge best;
  for (const auto& [name, value] : headers) {
    if (lower(name) != "www-authenticate") continue;
    std::string scheme;
    std::map<std::string, std::string> p;
    if (!parse_one(value, scheme, p)) continue;
    if (scheme == "digest") {
      const auto alg = p.count("algorithm") ? lower(p["algorithm"]) : "md5";
      if (alg != "md5" || p["nonce"].empty()) continue;  // MD5-sess, SHA-256: not answered
      auth_challenge c;
      c.scheme = auth_scheme::digest;
      c.realm = p["realm"];
      c.nonce = p["nonce"];
      c.opaque = p["opaque"];
      c.stale = lower(p["stale"]) == "true";
      if (p.count("qop")) {
        // qop="auth,auth-int": sluice answers "auth" when offered; auth-int alone is not answered.
        const auto q = lower(p["qop"]);
        std::size_t pos = 0;
        bool has_auth = false;
        while (pos <= q.size()) {
          auto end = q.find(',', pos);
          if (end == std::string::npos) end = q.size();
          auto item = q.substr(pos, end - pos);
          while (!item.empty() && item.front() == ' ') item.erase(item.begin());
          while (!item.empty() && item.back() == ' ') item.pop_back();
          has_auth = has_auth || item == "auth";
          pos = end + 1;
        }
        if (!has_auth) continue;
        c.qop_auth = true;
      }
      best = c;  // Digest wins over Basic
    } else if (scheme == "basic" && best.scheme == auth_scheme::none) {
      best.scheme = auth_scheme::basic;
      best.realm = p["realm"];
    }
  }
  return best;
}

std::optional<std::pair<std::string, std::string>> basic_credentials(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  if (v.size() < 6 || lower(v.substr(0, 6)) != "basic ") return std::nullopt;
  v.remove_prefix(6);
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  if (v.empty() || v.size() % 4 != 0 || v.size() > 4 * max_param_bytes) return std::nullopt;
  for (char c : v)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=')) return std::nullopt;
  std::vector<unsigned char> out(v.size() / 4 * 3 + 1);
  const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(v.data()), static_cast<int>(v.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the bytes the '=' padding stands for.
  std::size_t len = static_cast<std::size_t>(n);
  if (v.back() == '=') --len;
  if (v.size() >= 2 && v[v.size() - 2] == '=') --len;
  const std::string text(reinterpret_cast<const char*>(out.data()), len);
  const auto colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  return std::make_pair(text.substr(0, colon), text.substr(colon + 1));
}

std::string md5_hex(std::string_view text) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(text.data(), text.size(), md, &n, EVP_md5(), nullptr) != 1) return {};
  return to_hex(md, n);
}

std::string authorization(const auth_challenge& c, const std::string& user, const std::string& password,
                          const std::string& method, const std::string& uri, unsigned nc, const std::string& cnonce) {
  if (c.scheme == auth_scheme::basic) return "Basic " + base64(user + ":" + password);
  if (c.scheme != auth_scheme::digest) return {};
  // RFC 2617 3.2.2.1-3 (RFC 7616 3.4.1 for MD5).
  const auto ha1 = md5_hex(user + ":" + c.realm + ":" + password);
  const auto ha2 = md5_hex(method + ":" + uri);
  char nc_text[9];
  std::snprintf(nc_text, sizeof nc_text, "%08x", nc);
  const auto response = c.qop_auth ? md5_hex(ha1 + ":" + c.nonce + ":" + nc_text + ":" + cnonce + ":auth:" + ha2)
                                   : md5_hex(ha1 + ":" + c.nonce + ":" + ha2);
  std::string h = "Digest username=" + quoted(user) + ", realm=" + quoted(c.realm) + ", nonce=" + quoted(c.nonce) +
                  ", uri=" + quoted(uri) + ", response=" + quoted(response);
  if (!c.opaque.empty()) h += ", opaque=" + quoted(c.opaque);
  if (c.qop_auth) h += std::string(", qop=auth, nc=") + nc_text + ", cnonce=" + quoted(cnonce);
  return h;
}

}  // namespace sluice::net::rtsp
