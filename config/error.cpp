#include "config/error.hpp"

namespace sluice {

const char* to_string(errc c) {
  switch (c) {
    case errc::invalid_argument: return "invalid_argument";
    case errc::invalid_config: return "invalid_config";
    case errc::io: return "io";
    case errc::truncated: return "truncated";
    case errc::corrupt: return "corrupt";
    case errc::unsupported: return "unsupported";
    case errc::limit_exceeded: return "limit_exceeded";
    case errc::unavailable: return "unavailable";
    case errc::internal: return "internal";
  }
  return "unknown";
}

}  // namespace sluice
