#include "net/multipart.hpp"

namespace sluice::net {

namespace {
constexpr std::string_view boundary_key = "boundary=";
constexpr std::string_view header_end = "\r\n\r\n";
}  // namespace

std::optional<std::string> first_multipart_part(const std::string& content_type, const std::string& body) {
  const auto b = content_type.find(boundary_key);
  if (b == std::string::npos) return std::nullopt;
  std::string boundary = content_type.substr(b + boundary_key.size());
  if (const auto semi = boundary.find(';'); semi != std::string::npos) boundary.resize(semi);
  if (boundary.size() >= 2 && boundary.front() == '"') boundary = boundary.substr(1, boundary.size() - 2);
  // An empty boundary would match everywhere: such a form is malformed, not a file.
  if (boundary.empty()) return std::nullopt;
  const std::string delim = "--" + boundary;
  std::size_t pos = body.find(delim);
  while (pos != std::string::npos) {
    const auto headers_end = body.find(header_end, pos);
    if (headers_end == std::string::npos) return std::nullopt;
    const auto start = headers_end + header_end.size();
    const auto next = body.find("\r\n" + delim, start);
    if (next == std::string::npos) return std::nullopt;
    if (next > start) return body.substr(start, next - start);
    pos = next + 2;
  }
  return std::nullopt;
}

}  // namespace sluice::net
