// actors::tune_allocator: after it, blocks below 32 MiB come from the heap (glibc counts its
// mmapped blocks in mallinfo2().hblks), and an operator's GLIBC_TUNABLES malloc setting wins.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "actors/allocator.hpp"

// Under AddressSanitizer the allocator is ASan's own: glibc's mallopt is intercepted and refuses
// every setting (returns 0), and mallinfo2 says nothing about ASan's blocks.
#if defined(__SANITIZE_ADDRESS__)
#define SLUICE_ASAN_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLUICE_ASAN_ALLOCATOR 1
#endif
#endif

#if defined(__GLIBC__)
TEST_CASE("tune_allocator: a 24 MiB block comes from the heap afterwards, and GLIBC_TUNABLES wins") {
  const char* before = std::getenv("GLIBC_TUNABLES");
  const std::string saved = before ? before : "";
  ::setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=3", 1);
  CHECK(sluice::actors::tune_allocator().empty());
  ::unsetenv("GLIBC_TUNABLES");
  const std::string how = sluice::actors::tune_allocator();
  if (!saved.empty()) ::setenv("GLIBC_TUNABLES", saved.c_str(), 1);
  CHECK(how.find("32 MiB") != std::string::npos);
#if defined(SLUICE_ASAN_ALLOCATOR)
  // ASan's mallopt refuses: tune_allocator must say so rather than claim the settings.
  CHECK(how.find("not all") != std::string::npos);
  MESSAGE("SKIPPED: the heap check (mallinfo2) under AddressSanitizer, whose allocator replaces glibc's");
#else
  CHECK(how.find("not all") == std::string::npos);

  // glibc's default threshold is 128 KiB; it rises only after a larger mmapped block is freed,
  // and this process frees none of 24 MiB or more before this case.
  const auto mapped_blocks = [] { return mallinfo2().hblks; };
  const std::size_t n = 24u << 20;
  const auto h0 = mapped_blocks();
  auto* p = static_cast<char*>(std::malloc(n));
  REQUIRE(p != nullptr);
  volatile char* touch = p;
  touch[0] = 1;
  touch[n - 1] = 1;
  CHECK(mapped_blocks() == h0);
  std::free(p);
#endif
}
#else
TEST_CASE("tune_allocator: not glibc") {
  MESSAGE("SKIPPED: not glibc, tune_allocator does nothing");
  CHECK(sluice::actors::tune_allocator().empty());
}
#endif
