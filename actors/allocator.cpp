#include "actors/allocator.hpp"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sluice::actors {

std::string tune_allocator() {
#if defined(__GLIBC__)
  if (const char* t = std::getenv("GLIBC_TUNABLES"); t && std::strstr(t, "glibc.malloc.")) return "";
  constexpr int mmap_threshold = 32 << 20;  // glibc's largest allowed value on 64-bit
  constexpr int trim_threshold = 64 << 20;
  // The number of arenas stays glibc's (8 per core): capping it at max(2, cores) halved the
  // page faults of a file transcription but lost live channels to allocator lock contention
  // (engine_bench live on 2 cores: 704 and 768 channels fell behind, p99 final 5 s, where the
  // default arenas kept real time with p99 0.5-0.8 s).
  const bool ok = mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1 && mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1;
  return std::string(ok ? "" : "not all of: ") + "malloc blocks < 32 MiB from the heap, 64 MiB kept free";
#else
  return "";
#endif
}

}  // namespace sluice::actors
