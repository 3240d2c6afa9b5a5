#include "net/rtsp/rtsp_message.hpp"

#include <algorithm>
#include <cctype>

namespace sluice::net::rtsp {

namespace {
constexpr uint8_t interleaved_magic = '$';
constexpr std::size_t interleaved_header = 4;  // '$', channel, 16-bit length
constexpr long long max_cseq = 0x7fffffffLL;
constexpr std::size_t max_cseq_digits = 10;
constexpr std::string_view rtsp_version = "RTSP/1.0";

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A non-negative decimal below 2^31, or -1.
long long parse_number(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.size() > max_cseq_digits) return -1;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v <= max_cseq ? v : -1;
}

bool has_control(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 && c != '\t'; });
}

parsed_frame error(int status, std::string reason) {
  parsed_frame f;
  f.kind = frame_kind::error;
  f.error_status = status;
  f.error_reason = std::move(reason);
  return f;
}

// An interleaved frame at the start of `buf` (buf[0] == '$').
parsed_frame parse_interleaved(std::span<const uint8_t> buf) {
  parsed_frame f;
  if (buf.size() < interleaved_header) return f;
  const std::size_t len = (std::size_t(buf[2]) << 8) | buf[3];
  if (buf.size() < interleaved_header + len) return f;
  f.kind = frame_kind::interleaved;
  f.channel = buf[1];
  f.payload = buf.subspan(interleaved_header, len);
  f.consumed = interleaved_header + len;
  return f;
}

// Start line, headers and body; `start` receives the start line's three parts.
parsed_frame parse_message(std::span<const uint8_t> buf, const message_limits& limits, bool is_request) {
  if (!buf.empty() && buf[0] == interleaved_magic) return parse_interleaved(buf);
  const std::string_view text(reinterpret_cast<const char*>(buf.data()), buf.size());
  // RFC 2326 allows bare LF line ends; a blank line ends the headers either way.
  std::size_t end = text.find("\r\n\r\n");
  std::size_t sep = 4;
  if (const auto lf = text.find("\n\n"); lf != std::string_view::npos && (end == std::string_view::npos || lf < end)) {
    end = lf;
    sep = 2;
  }
  if (end == std::string_view::npos) {
    if (text.size() > limits.max_header_bytes)
      return error(413, "headers longer than " + std::to_string(limits.max_header_bytes) + " bytes");
    return {};
  }
  if (end > limits.max_header_bytes)
    return error(413, "headers longer than " + std::to_string(limits.max_header_bytes) + " bytes");
  const std::string_view head = text.substr(0, end);
  std::vector<std::string_view> lines;
  for (std::size_t pos = 0; pos <= head.size();) {
    auto nl = head.find('\n', pos);
    if (nl == std::string_view::npos) nl = head.size();
    lines.push_back(trim(head.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  if (lines.empty() || lines[0].empty()) return error(400, "empty start line");
  const auto start = lines[0];
  if (has_control(start)) return error(400, "control characters in the start line");
  const auto s1 = start.find(' ');
  const auto s2 = s1 == std::string_view::npos ? s1 : start.find(' ', s1 + 1);
  if (s1 == std::string_view::npos || s2 == std::string_view::npos || s1 == 0 || s2 == s1 + 1)
    return error(400, "the start line is not three fields");
  const auto a = start.substr(0, s1), b = start.substr(s1 + 1, s2 - s1 - 1), c = trim(start.substr(s2 + 1));
  parsed_frame f;
  f.kind = frame_kind::request;
  if (is_request) {
    if (c != rtsp_version) {
      if (c.rfind("RTSP/", 0) == 0) return error(505, "only RTSP/1.0 is spoken here");
      return error(400, "not an RTSP request");
    }
    f.request.method = std::string(a);
    f.request.uri = std::string(b);
    f.request.version = std::string(c);
  } else {
    if (a != rtsp_version) return error(400, "not an RTSP/1.0 response");
    const auto st = parse_number(b);
    if (st < 100 || st > 999) return error(400, "a response status that is not a 3-digit code");
    f.response.version = std::string(a);
    f.response.status = static_cast<int>(st);
    f.response.reason = std::string(c);
  }
  header_list headers;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto line = lines[i];
    if (line.empty()) continue;
    if (has_control(line)) return error(400, "control characters in a header");
    if (line.front() == ' ' || line.front() == '\t') return error(400, "folded headers are not accepted");
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return error(400, "a header line without a name");
    if (headers.size() >= limits.max_headers)
      return error(413, "more than " + std::to_string(limits.max_headers) + " headers");
    headers.emplace_back(std::string(trim(line.substr(0, colon))), std::string(trim(line.substr(colon + 1))));
  }
  std::size_t body_len = 0;
  if (const auto cl = find_header(headers, "Content-Length")) {
    const auto n = parse_number(*cl);
    if (n < 0) return error(400, "Content-Length is not a number");
    if (static_cast<std::size_t>(n) > limits.max_body_bytes)
      return error(413, "a body of " + std::to_string(n) + " bytes (at most " + std::to_string(limits.max_body_bytes) + ")");
    body_len = static_cast<std::size_t>(n);
  }
  const std::size_t body_at = end + sep;
  if (text.size() < body_at + body_len) return {};
  long long cseq = -1;
  if (const auto cs = find_header(headers, "CSeq")) cseq = parse_number(*cs);
  if (is_request) {
    f.request.headers = std::move(headers);
    f.request.body = std::string(text.substr(body_at, body_len));
    f.request.cseq = cseq;
  } else {
    f.response.headers = std::move(headers);
    f.response.body = std::string(text.substr(body_at, body_len));
    f.response.cseq = cseq;
  }
  f.consumed = body_at + body_len;
  return f;
}

void append_headers(std::string& out, long long cseq, const header_list& headers, std::string_view body) {
  if (cseq >= 0) out += "CSeq: " + std::to_string(cseq) + "\r\n";
  for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
  if (!body.empty()) out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "\r\n";
  out += body;
}
}  // namespace

std::optional<std::string> find_header(const header_list& h, std::string_view name) {
  for (const auto& [k, v] : h)
    if (iequals(k, name)) return v;
  return std::nullopt;
}

parsed_frame parse_request(std::span<const uint8_t> buf, const message_limits& limits) {
  return parse_message(buf, limits, true);
}

parsed_frame parse_response(std::span<const uint8_t> buf, const message_limits& limits) {
  return parse_message(buf, limits, false);
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 451: return "Parameter Not Understood";
    case 454: return "Session Not Found";
    case 455: return "Method Not Valid in This State";
    case 459: return "Aggregate Operation Not Allowed";
    case 461: return "Unsupported Transport";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "RTSP Version Not Supported";
    case 551: return "Option not supported";
    default: return "Error";
  }
}

std::string render_response(int status, long long cseq, const header_list& headers, std::string_view body) {
  std::string out = std::string(rtsp_version) + " " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  append_headers(out, cseq, headers, body);
  return out;
}

std::string render_request(std::string_view method, std::string_view uri, long long cseq, const header_list& headers,
                           std::string_view body) {
  std::string out = std::string(method) + " " + std::string(uri) + " " + std::string(rtsp_version) + "\r\n";
  append_headers(out, cseq, headers, body);
  return out;
}

std::vector<uint8_t> render_interleaved(uint8_t channel, std::span<const uint8_t> payload) {
  std::vector<uint8_t> out;
  out.reserve(interleaved_header + payload.size());
  out.push_back(interleaved_magic);
  out.push_back(channel);
  out.push_back(static_cast<uint8_t>(payload.size() >> 8));
  out.push_back(static_cast<uint8_t>(payload.size() & 0xff));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

}  // namespace sluice::net::rtsp
