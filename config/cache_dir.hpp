#pragma once
/// Where sluice keeps what it derives from its inputs to start faster next time (a parsed word
/// LM, the placement probe): $XDG_CACHE_HOME/sluice, else $HOME/.cache/sluice; "" when neither
/// variable is set (nothing is kept then).

#include <cstdlib>
#include <string>

namespace sluice::config {

inline std::string user_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/sluice";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/sluice";
  return {};
}

}  // namespace sluice::config
