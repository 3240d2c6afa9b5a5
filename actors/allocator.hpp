#pragma once
/// The C allocator's settings for one engine process, set once at start before its threads
/// (glibc; elsewhere nothing is done).
///
/// glibc's defaults cost a file transcription measurably (session 36, the 2-core host, `sluice
/// transcribe` of 64 copies of the bundled call): buffers of 128 KiB or more (a file's samples,
/// a segment, a resampled channel) were mapped and unmapped on every use and each of their pages
/// faulted in again (page faults were 13-16% of a one-core run's CPU samples in this VM), and
/// every short-lived thread (one per file being decoded) could start an arena of its own, up to
/// 8 per core, whose freed memory no other thread reuses. So:
///  - blocks up to 32 MiB come from the heap (M_MMAP_THRESHOLD; glibc raises its threshold only
///    after such a block is freed, which made the speed depend on what start-up happened to
///    free: the weights' 20 MB read buffer, until weights were mapped instead);
///  - up to 64 MiB of free heap is kept rather than returned to the OS (M_TRIM_THRESHOLD).
/// The arenas stay glibc's: capping them (M_ARENA_MAX = max(2, cores)) cut the faults further
/// but cost live channels (see allocator.cpp).
///
/// An operator's GLIBC_TUNABLES naming any glibc.malloc setting wins: then nothing is changed.

#include <string>

namespace sluice::actors {

/// Applies the settings above; says what it did ("" when nothing).
std::string tune_allocator();

}  // namespace sluice::actors
