#pragma once
/// The error value every non-actor module returns (config, dsp, kernels, moe).
/// Expected failures are values, not exceptions: `result<T>` is `tl::expected<T, error>`.

#include <string>
#include <utility>

#include <tl/expected.hpp>

namespace sluice {

/// What kind of failure, so callers can map it to a protocol status without parsing text.
enum class errc {
  invalid_argument,  ///< a caller passed a value outside the contract
  invalid_config,    ///< a config key has a bad value or is unknown
  io,                ///< a file could not be opened or read
  truncated,         ///< input ended before a structure it announced was complete
  corrupt,           ///< input is malformed (bad magic, bad sizes, codec error)
  unsupported,       ///< well-formed input in a format or variant we do not handle
  limit_exceeded,    ///< well-formed input over a configured limit (duration, channels, size)
  unavailable,       ///< a backend/device is not present on this machine
  internal,          ///< a library we call failed in a way that is not the input's fault
};

/// A short machine-readable name for `c` ("corrupt", "truncated", ...).
const char* to_string(errc c);

struct error {
  errc code;
  std::string message;  ///< names the problem precisely: what, where, what was expected
};

template <class T>
using result = tl::expected<T, error>;

/// `return fail(errc::corrupt, "wav: ...");` from a function returning `result<T>`.
inline tl::unexpected<error> fail(errc code, std::string message) {
  return tl::unexpected<error>(error{code, std::move(message)});
}

}  // namespace sluice
