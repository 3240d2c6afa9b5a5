#pragma once
/// A whole file's bytes, read-only, for the loaders of large inputs (model weights, word LMs):
/// a regular file is mapped (mmap, pages populated in one call) instead of read into a zeroed
/// buffer. Measured on the 2-core host (session 36): a one-file `sluice transcribe` spent about
/// a third of its 0.4 s start in memset, page faults and kernel copies of such reads. Anything
/// else (a FIFO, /dev/stdin) is read to its end into memory. Written here because POSIX mmap is
/// a few lines and Debian 12's Boost.Iostreams mapped_file is Boost 1.74's, which conflicts with
/// the Boost 1.81 headers the engine builds with (see setup.sh).
///
/// A mapped file must not be truncated while mapped (reading past its new end is SIGBUS): the
/// loaders hold one only while they parse and copy, and the files they read are replaced by
/// rename, which leaves the mapped one intact.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"

namespace sluice::config {

class mapped_file {
 public:
  /// The bytes of `path`; errc::io naming the path and the OS's reason when it cannot be opened
  /// or read (a directory included).
  static result<mapped_file> open(const std::string& path);

  mapped_file() = default;
  mapped_file(mapped_file&& o) noexcept;
  mapped_file& operator=(mapped_file&& o) noexcept;
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file();

  std::span<const std::byte> bytes() const {
    return map_ ? std::span<const std::byte>(static_cast<const std::byte*>(map_), size_) : std::span<const std::byte>(copy_);
  }
  std::string_view text() const { return {reinterpret_cast<const char*>(bytes().data()), size()}; }
  std::size_t size() const { return map_ ? size_ : copy_.size(); }
  /// Whether the bytes are a mapping of the file (false: read into memory).
  bool mapped() const { return map_ != nullptr; }

 private:
  void release();

  void* map_ = nullptr;          // the mapping, when mapped
  std::size_t size_ = 0;         // its length
  std::vector<std::byte> copy_;  // the bytes, when read
};

}  // namespace sluice::config
