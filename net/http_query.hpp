#pragma once
/// The query string of a request target ("/v1/transcribe?sample_rate=8000&encoding=mulaw"),
/// checked before any of it is used or echoed: keys and values are taken as they are (no
/// percent-decoding: the values used are plain names and numbers) and must be valid UTF-8.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "config/error.hpp"

namespace sluice::net {

/// key -> value of "a=1&b=x" after the first '?'. errc::invalid_argument when a key or value is
/// not valid UTF-8 (the message does not quote it).
result<std::map<std::string, std::string>> query_params(std::string_view target);

/// `value` as a whole decimal integer in [lo, hi] ("8000abc", "1.5", "" and out-of-range values
/// are errc::invalid_argument naming `key`).
result<int64_t> query_int(std::string_view key, std::string_view value, int64_t lo, int64_t hi);

}  // namespace sluice::net
