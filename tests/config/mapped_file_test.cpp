// config::mapped_file: a regular file's bytes through a mapping, anything else read to its end,
// and the errors of what cannot be read.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "config/mapped_file.hpp"

using sluice::errc;
using sluice::config::mapped_file;

namespace {

std::string scratch_dir() {
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() / ("sluice-mapped-" + std::to_string(rd()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("mapped_file gives a regular file's bytes, mapped, and keeps them valid when moved") {
  const auto dir = scratch_dir();
  std::string bytes(300000, '\0');
  std::mt19937 rng(3);
  for (char& c : bytes) c = static_cast<char>(rng());
  write(dir + "/f.bin", bytes);
  auto f = mapped_file::open(dir + "/f.bin");
  REQUIRE(f);
  CHECK(f->mapped());
  CHECK(f->size() == bytes.size());
  CHECK(f->text() == bytes);
  mapped_file moved = std::move(*f);
  CHECK(f->size() == 0);
  CHECK(moved.text() == bytes);
  // A replacement by rename (how the LM cache is written) leaves the mapped bytes as they were.
  write(dir + "/g.bin", "other");
  std::filesystem::rename(dir + "/g.bin", dir + "/f.bin");
  CHECK(moved.text() == bytes);
  std::filesystem::remove_all(dir);
}

TEST_CASE("mapped_file reads an empty file and a FIFO to their ends") {
  const auto dir = scratch_dir();
  write(dir + "/empty", "");
  auto e = mapped_file::open(dir + "/empty");
  REQUIRE(e);
  CHECK(e->size() == 0);
  CHECK_FALSE(e->mapped());

  const std::string fifo = dir + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string text(200000, 'x');  // more than a pipe holds, so the reader must loop
  std::thread writer([&] { write(fifo, text + "end"); });
  auto p = mapped_file::open(fifo);
  writer.join();
  REQUIRE(p);
  CHECK_FALSE(p->mapped());
  CHECK(p->text() == text + "end");
  std::filesystem::remove_all(dir);
}

TEST_CASE("mapped_file names the path and the reason when it cannot read") {
  const auto dir = scratch_dir();
  auto missing = mapped_file::open(dir + "/nope");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == errc::io);
  CHECK(missing.error().message.find(dir + "/nope") != std::string::npos);
  CHECK(missing.error().message.find("No such file") != std::string::npos);
  auto d = mapped_file::open(dir);
  REQUIRE_FALSE(d);
  CHECK(d.error().code == errc::io);
  CHECK(d.error().message.find("directory") != std::string::npos);
  std::filesystem::remove_all(dir);
}
