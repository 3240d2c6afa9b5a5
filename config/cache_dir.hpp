#pragma once
/// Where sluice keeps what it derives from its inputs to start faster next time (a parsed word
/// LM, the placement probe): $XDG_CACHE_HOME/sluice, else $HOME/.cache/sluice; "" when neither
/// variable is set (nothing is kept then). And how a kept file is named and written.

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace sluice::config {

inline std::string user_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/sluice";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/sluice";
  return {};
}

/// <dir>/<prefix>-<key as 16 hex digits><suffix>, e.g. "lm-00ab...ff.bin".
inline std::string cache_file(const std::string& dir, std::string_view prefix, uint64_t key, std::string_view suffix) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(key));
  return (std::filesystem::path(dir) / (std::string(prefix) + "-" + hex + std::string(suffix))).string();
}

/// Writes `bytes` to `path` (its directory made if missing) aside and renames it there, so a
/// concurrent reader sees the old file or the new one, never half; false (and nothing left
/// behind) when it cannot. The temporary name is unique per process and per call: two starts,
/// or two engines of one process, may write at once.
inline bool write_cache_file(const std::string& path, std::string_view bytes) {
  static std::atomic<uint64_t> writes{0};
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(writes++);
  bool written = false;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    written = out.good();
  }
  if (written) std::filesystem::rename(tmp, path, ec);
  if (written && !ec) return true;
  std::filesystem::remove(tmp, ec);
  return false;
}

}  // namespace sluice::config
