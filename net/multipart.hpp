#pragma once
/// multipart/form-data bodies (RFC 7578) of POST /v1/transcribe: the part that holds the file.

#include <optional>
#include <string>

namespace sluice::net {

/// The body of the first part of `body` that has content, given the request's Content-Type
/// (which names the boundary); nullopt when the type has no boundary or the body is malformed.
/// Pure: no I/O, never throws past std::bad_alloc.
std::optional<std::string> first_multipart_part(const std::string& content_type, const std::string& body);

}  // namespace sluice::net
