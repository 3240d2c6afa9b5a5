#include "net/auth/gate.hpp"

#include <cctype>

#include <boost/asio/ip/address.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace sluice::net::auth {

namespace {

namespace http = boost::beast::http;

constexpr std::string_view bearer_scheme = "bearer ";
constexpr std::string_view token_scheme = "token ";  // Deepgram's SDKs: "Authorization: Token <key>"
constexpr std::string_view token_param = "token=";
constexpr std::string_view api_key_header = "X-API-Key";
const std::string challenge = "Bearer realm=\"sluice\"";

// What a route needs: nothing, any valid key, or a scope.
struct need {
  bool key = true;
  std::optional<scope> scope_needed;
};

need route_need(const http_request& req, const std::string& path, bool metrics_open) {
  // Calls (net/calls/calls_api.hpp) are read: their live events too, though a WebSocket.
  if (path == "/v1/events" || path == "/v1/calls" || path.rfind("/v1/calls/", 0) == 0) return {true, scope::read};
  if (boost::beast::websocket::is_upgrade(req)) return {true, scope::stream};
  if (path == "/healthz" || path == "/readyz") return {false, {}};
  if (path == "/metrics") return metrics_open ? need{false, {}} : need{true, scope::metrics};
  if (path == "/" || path == "/index.html" || path == "/v1/actors" || path == "/v1/placement")
    return {true, scope::read};
  if (path == "/v1/transcribe" || path == "/v1/listen") return {true, scope::stream};
  return {true, {}};
}

bool iequals_prefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

// The value of `token=` in the query of `target`, when present.
std::optional<std::string> query_token(std::string_view target) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  auto query = target.substr(q + 1);
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto kv = query.substr(0, amp);
    if (kv.substr(0, token_param.size()) == token_param) return std::string(kv.substr(token_param.size()));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

// A browser cannot set headers on a WebSocket: Deepgram's browser client offers the subprotocols
// "token, <key>" instead. The key when the header is exactly that pair.
std::optional<std::string> subprotocol_key(std::string_view offered) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  const auto comma = offered.find(',');
  if (comma == std::string_view::npos || trim(offered.substr(0, comma)) != "token") return std::nullopt;
  const auto key = trim(offered.substr(comma + 1));
  if (key.empty() || key.find(',') != std::string_view::npos) return std::nullopt;
  return std::string(key);
}

// The presented key, when there is one: header first, then the query where it is accepted.
std::optional<std::string> presented_key(const http_request& req, const std::string& path) {
  if (const auto a = req[http::field::authorization]; !a.empty()) {
    const std::size_t scheme = iequals_prefix(a, bearer_scheme) ? bearer_scheme.size()
                               : iequals_prefix(a, token_scheme) ? token_scheme.size()
                                                                 : 0;
    if (scheme == 0) return std::string();  // present but neither a bearer nor a token key: invalid
    auto v = a.substr(scheme);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    return std::string(v);
  }
  if (const auto k = req[api_key_header]; !k.empty()) return std::string(k);
  // Only where the subprotocol "token" is granted (Deepgram's path): elsewhere a browser would
  // abort the handshake that does not grant it.
  if (boost::beast::websocket::is_upgrade(req) && path == "/v1/listen")
    if (auto k = subprotocol_key(req[http::field::sec_websocket_protocol])) return k;
  const bool query_allowed = boost::beast::websocket::is_upgrade(req) || path == "/" || path == "/index.html";
  if (query_allowed) return query_token(req.target());
  return std::nullopt;
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  boost::system::error_code ec;
  const auto a = boost::asio::ip::make_address(host, ec);
  return !ec && a.is_loopback();
}

result<std::shared_ptr<const gate>> gate::create(const config::server_config& server, const config::auth_config& auth) {
  auto g = std::make_shared<gate>();
  g->metrics_open_ = auth.metrics_open;
  if (auth.keys_file.empty()) {
    if (!is_loopback_host(server.host) && !auth.allow_insecure_public)
      return fail(errc::invalid_config,
                  "server.host = \"" + server.host +
                      "\" is not a loopback address and no API keys are configured: anyone who reaches it could "
                      "stream and read every transcript. Set auth.keys_file (create keys with `sluice keys add "
                      "--tenant NAME --scopes stream,read`), or set auth.allow_insecure_public = true to serve it "
                      "without keys anyway");
    if (!is_loopback_host(server.host))
      spdlog::warn("auth: serving {} without API keys (auth.allow_insecure_public): every client may stream and "
                   "read every transcript",
                   server.host);
    return std::shared_ptr<const gate>(std::move(g));
  }
  auto keys = live_key_store::open(auth.keys_file);
  if (!keys) return tl::unexpected(keys.error());
  // Only at start: a reload to a file without keys is applied (live_key_store.hpp).
  if ((*keys)->current()->size() == 0)
    return fail(errc::invalid_config, "auth.keys_file = \"" + auth.keys_file +
                                          "\" holds no keys, so no client could connect: add one with `sluice keys "
                                          "add --tenant NAME --scopes stream,read`");
  spdlog::info("auth: {} API keys from {}{}", (*keys)->current()->size(), auth.keys_file,
               auth.metrics_open ? "; /metrics open (auth.metrics_open)" : "");
  g->keys_ = std::move(*keys);
  return std::shared_ptr<const gate>(std::move(g));
}

tl::expected<principal, refusal> gate::admit(const http_request& req) const {
  if (!keys_) return principal::anonymous();
  const std::string target(req.target());
  const std::string path = target.substr(0, target.find('?'));
  const auto n = route_need(req, path, metrics_open_);
  if (!n.key) return principal::unauthenticated();
  const auto key = presented_key(req, path);
  if (!key) return tl::unexpected(refusal{401, challenge, "an API key is required (Authorization: Bearer <key>, or Token <key>)"});
  // A copy of the current store: a reload meanwhile swaps the pointer, never this store, and
  // the hashing runs outside the store's lock.
  const auto store = keys_->current();
  const auto who = store->authenticate(*key);
  if (!who) {
    spdlog::debug("auth: 401 for {}: invalid API key", path);
    return tl::unexpected(refusal{401, challenge + ", error=\"invalid_token\"", "invalid API key", true});
  }
  if (n.scope_needed && !who->allows(*n.scope_needed)) {
    const std::string s = to_string(*n.scope_needed);
    spdlog::debug("auth: 403 for {}: key {} (tenant {}) lacks scope {}", path, who->key_id, who->tenant, s);
    return tl::unexpected(refusal{403, challenge + ", error=\"insufficient_scope\", scope=\"" + s + "\"",
                                  "this API key lacks the \"" + s + "\" scope"});
  }
  return *who;
}

http_response gate::response(const refusal& r, unsigned http_version) {
  http_response res{static_cast<http::status>(r.status), http_version};
  res.set(http::field::server, "sluice");
  res.set(http::field::content_type, "application/json");
  res.set(http::field::www_authenticate, r.www_authenticate);
  res.keep_alive(false);
  res.body() = nlohmann::json{{"error", r.reason}}.dump();
  res.prepare_payload();
  return res;
}

}  // namespace sluice::net::auth
