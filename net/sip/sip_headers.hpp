#pragma once
/// Reading what sofia-sip parsed out of a SIP message, and the one header sluice writes itself.
/// Pure functions; a missing header gives the documented default, never a null dereference.

#include <sofia-sip/sip.h>

#include <cstdint>
#include <string>

#include "net/steady_time.hpp"  // net::steady_ms: call timing (answer delay, RTP timeout, event offsets)

namespace sluice::net::sip {

/// The Content-Type with its parameters (the multipart boundary) as "type/sub;p=v";
/// "application/sdp" when the message has none.
std::string content_type_of(const sip_t* sip);

/// A Warning header value (RFC 3261 20.43, code 399) carrying `text`, with the quotes and line
/// breaks a quoted string may not hold replaced by spaces.
std::string warning_of(const std::string& text);

/// "user@host" of a From/To address ("host" without a user; "" for none).
std::string address_of(const sip_addr_s* a);

}  // namespace sluice::net::sip
