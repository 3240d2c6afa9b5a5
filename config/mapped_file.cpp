#include "config/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace sluice::config {
namespace {

struct fd_closer {
  int fd;
  ~fd_closer() {
    if (fd >= 0) ::close(fd);
  }
};

error io_error(const std::string& what, const std::string& path, int err) {
  return error{errc::io, what + " " + path + ": " + std::strerror(err)};
}

}  // namespace

result<mapped_file> mapped_file::open(const std::string& path) {
  fd_closer f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return tl::unexpected(io_error("cannot open", path, errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return tl::unexpected(io_error("cannot read", path, errno));
  if (S_ISDIR(st.st_mode)) return tl::unexpected(io_error("cannot read", path, EISDIR));
  mapped_file out;
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    const auto size = static_cast<std::size_t>(st.st_size);
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, f.fd, 0);
    if (p != MAP_FAILED) {
      out.map_ = p;
      out.size_ = size;
      return out;
    }
    // Not mappable (some file systems): read it below.
  }
  // A FIFO, a character device, an empty or unmappable file: read to the end.
  std::vector<std::byte> bytes;
  if (S_ISREG(st.st_mode) && st.st_size > 0) bytes.reserve(static_cast<std::size_t>(st.st_size));
  std::byte chunk[65536];
  for (;;) {
    const ssize_t n = ::read(f.fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return tl::unexpected(io_error("cannot read", path, errno));
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  out.copy_ = std::move(bytes);
  return out;
}

mapped_file::mapped_file(mapped_file&& o) noexcept { *this = std::move(o); }

mapped_file& mapped_file::operator=(mapped_file&& o) noexcept {
  if (this == &o) return *this;
  release();
  map_ = std::exchange(o.map_, nullptr);
  size_ = std::exchange(o.size_, 0);
  copy_ = std::move(o.copy_);
  o.copy_.clear();
  return *this;
}

mapped_file::~mapped_file() { release(); }

void mapped_file::release() {
  if (map_) ::munmap(map_, size_);
  map_ = nullptr;
  size_ = 0;
  copy_.clear();
}

}  // namespace sluice::config
