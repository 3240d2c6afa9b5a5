#include "actors/allocator.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sluice::actors {

std::string tune_allocator(int cores) {
#if defined(__GLIBC__)
  if (const char* t = std::getenv("GLIBC_TUNABLES"); t && std::strstr(t, "glibc.malloc.")) return "";
  constexpr int mmap_threshold = 32 << 20;  // glibc's largest allowed value on 64-bit
  constexpr int trim_threshold = 64 << 20;
  const int arenas = std::max(2, cores);
  const bool ok = mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1 && mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1 &&
                  mallopt(M_ARENA_MAX, arenas) == 1;
  return std::string(ok ? "" : "not all of: ") + "malloc blocks < 32 MiB from the heap, 64 MiB kept free, " +
         std::to_string(arenas) + " arenas";
#else
  (void)cores;
  return "";
#endif
}

}  // namespace sluice::actors
