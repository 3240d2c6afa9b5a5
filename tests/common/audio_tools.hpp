#pragma once
/// Test helpers that make real audio with Debian's tools (espeak-ng, sox, opusenc) at test time.
/// Header-only, standard library only, so every test suite can use it.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace sluice::test {

/// A fresh directory under the system temp dir, removed when this object dies.
class temp_dir {
 public:
  temp_dir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("sluice-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Runs a shell command; returns its exit status (0 on success). Output goes to stderr.
inline int run(const std::string& cmd) { return std::system((cmd + " 1>&2").c_str()); }

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::string read_text(const std::string& path) {
  auto b = read_bytes(path);
  return std::string(b.begin(), b.end());
}

/// Writes `text` to `path`, replacing what was there.
inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

/// Speaks `text` with espeak-ng into a 16-bit mono WAV at espeak's native 22050 Hz.
inline bool espeak(const std::string& text, const std::string& wav_path,
                   const std::string& voice = "en-us", int words_per_min = 160) {
  return run("espeak-ng -v " + voice + " -s " + std::to_string(words_per_min) + " -w '" + wav_path +
             "' '" + text + "'") == 0;
}

/// Runs sox with the given argument string.
inline bool sox(const std::string& args) { return run("sox " + args) == 0; }

}  // namespace sluice::test
