#pragma once
/// RTSP/1.0 (RFC 2326) message framing over a TCP byte stream: requests (the server side) and
/// responses (the pull client), each a start line, headers and an optional body of
/// Content-Length bytes; and RTP interleaved on the same stream ('$', channel, 16-bit length,
/// payload; RFC 2326 10.12). Pure functions over untrusted bytes with bounded sizes: a message
/// that is malformed or too large is an error value with the status to answer, never an
/// exception or an unbounded buffer.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::net::rtsp {

/// What one side of a connection accepts.
struct message_limits {
  std::size_t max_header_bytes = 8192;  ///< start line and headers, up to the blank line
  std::size_t max_body_bytes = 16384;   ///< Content-Length at most
  std::size_t max_headers = 64;
};

using header_list = std::vector<std::pair<std::string, std::string>>;

/// The value of header `name` (case-insensitive), or nullopt.
std::optional<std::string> find_header(const header_list& h, std::string_view name);

struct rtsp_request {
  std::string method;  ///< as sent (methods are case-sensitive)
  std::string uri;
  std::string version;  ///< "RTSP/1.0"
  header_list headers;
  std::string body;
  /// CSeq; -1 when missing or not a non-negative number below 2^31.
  long long cseq = -1;
};

struct rtsp_response {
  std::string version;
  int status = 0;
  std::string reason;
  header_list headers;
  std::string body;
  long long cseq = -1;
};

enum class frame_kind {
  need_more,    ///< the buffer holds no whole frame yet (and nothing wrong so far)
  request,      ///< a whole request (or response, for parse_response) was read
  interleaved,  ///< a whole '$' frame was read
  error,        ///< malformed or too large: answer `error_status` and close
};

struct parsed_frame {
  frame_kind kind = frame_kind::need_more;
  std::size_t consumed = 0;  ///< bytes of the buffer this frame took
  rtsp_request request;      ///< kind == request (parse_request)
  rtsp_response response;    ///< kind == request (parse_response)
  uint8_t channel = 0;       ///< kind == interleaved
  std::span<const uint8_t> payload;  ///< kind == interleaved: a view into the buffer
  int error_status = 0;      ///< kind == error: 400, 413, 505
  std::string error_reason;  ///< kind == error: what was wrong, for the reply and the log
};

/// The next frame at the start of `buf` (a request or an interleaved frame).
parsed_frame parse_request(std::span<const uint8_t> buf, const message_limits& limits);
/// The same for the client side: the next response or interleaved frame.
parsed_frame parse_response(std::span<const uint8_t> buf, const message_limits& limits);

/// The standard reason phrase of an RTSP status code ("OK", "Session Not Found", ...).
const char* reason_phrase(int status);

/// A response's bytes: status line, CSeq (when >= 0), the given headers, Content-Length when
/// there is a body, the body.
std::string render_response(int status, long long cseq, const header_list& headers, std::string_view body = {});

/// A request's bytes (the pull client), with CSeq and Content-Length when there is a body.
std::string render_request(std::string_view method, std::string_view uri, long long cseq, const header_list& headers,
                           std::string_view body = {});

/// An interleaved frame's bytes.
std::vector<uint8_t> render_interleaved(uint8_t channel, std::span<const uint8_t> payload);

}  // namespace sluice::net::rtsp
