#include "net/rtsp/rtsp_transport.hpp"

#include <cctype>
#include <vector>

namespace sluice::net::rtsp {

namespace {
constexpr int max_channel = 255;
constexpr int max_port = 65535;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t pos = 0;;) {
    const auto at = s.find(sep, pos);
    out.push_back(trim(s.substr(pos, at == std::string_view::npos ? std::string_view::npos : at - pos)));
    if (at == std::string_view::npos) return out;
    pos = at + 1;
  }
}

std::optional<int> number(std::string_view s, int max) {
  if (s.empty() || s.size() > 5) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v > max) return std::nullopt;
  return v;
}

// "a-b" or "a" (then b = a + 1).
std::optional<std::pair<int, int>> pair_of(std::string_view s, int max) {
  const auto dash = s.find('-');
  auto a = number(s.substr(0, dash), max);
  if (!a) return std::nullopt;
  if (dash == std::string_view::npos) return std::pair{*a, std::min(*a + 1, max)};
  auto b = number(s.substr(dash + 1), max);
  if (!b) return std::nullopt;
  return std::pair{*a, *b};
}
}  // namespace

std::optional<transport_spec> parse_transport(std::string_view one) {
  const auto parts = split(one, ';');
  if (parts.empty()) return std::nullopt;
  const auto proto = lower(parts[0]);
  transport_spec t;
  if (proto == "rtp/avp/tcp") t.tcp = true;
  else if (proto != "rtp/avp" && proto != "rtp/avp/udp") return std::nullopt;
  bool unicast = true, have_interleaved = false, have_client = false;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const auto eq = parts[i].find('=');
    const auto key = lower(parts[i].substr(0, eq));
    const auto val = eq == std::string_view::npos ? std::string_view{} : trim(parts[i].substr(eq + 1));
    if (key == "multicast") unicast = false;
    else if (key == "interleaved") {
      auto p = pair_of(val, max_channel);
      if (!p) return std::nullopt;
      t.rtp_channel = p->first;
      t.rtcp_channel = p->second;
      have_interleaved = true;
    } else if (key == "client_port") {
      auto p = pair_of(val, max_port);
      if (!p || p->first == 0) return std::nullopt;
      t.client_rtp_port = static_cast<uint16_t>(p->first);
      t.client_rtcp_port = static_cast<uint16_t>(p->second);
      have_client = true;
    } else if (key == "server_port") {
      auto p = pair_of(val, max_port);
      if (!p) return std::nullopt;
      t.server_rtp_port = static_cast<uint16_t>(p->first);
      t.server_rtcp_port = static_cast<uint16_t>(p->second);
    } else if (key == "mode") {
      const auto m = lower(val);
      t.record = m.find("record") != std::string::npos;
    } else if (key == "ssrc") {
      t.ssrc = std::string(val);
    }
  }
  if (!unicast) return std::nullopt;
  // TCP without interleaved= takes channels 0-1 (RFC 2326 12.39: the server picks).
  (void)have_interleaved;
  if (!t.tcp && !have_client && t.server_rtp_port == 0) return std::nullopt;
  return t;
}

std::optional<transport_spec> choose_transport(std::string_view value) {
  for (auto one : split(value, ','))
    if (auto t = parse_transport(one)) return t;
  return std::nullopt;
}

std::string render_transport(const transport_spec& t) {
  std::string out;
  if (t.tcp) {
    out = "RTP/AVP/TCP;unicast;interleaved=" + std::to_string(t.rtp_channel) + "-" + std::to_string(t.rtcp_channel);
  } else {
    out = "RTP/AVP/UDP;unicast;client_port=" + std::to_string(t.client_rtp_port) + "-" +
          std::to_string(t.client_rtcp_port);
    if (t.server_rtp_port != 0)
      out += ";server_port=" + std::to_string(t.server_rtp_port) + "-" + std::to_string(t.server_rtp_port + 1);
  }
  if (!t.ssrc.empty()) out += ";ssrc=" + t.ssrc;
  if (t.record) out += ";mode=record";
  return out;
}

}  // namespace sluice::net::rtsp
