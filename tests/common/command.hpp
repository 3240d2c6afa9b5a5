#pragma once
/// A shell command run to its end: its exit status and everything it wrote on stdout (stderr
/// goes where the command line sends it). One popen loop for every test that runs a tool.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace sluice::test {

struct command_result {
  int status = -1;  ///< exit status; -1 if the command could not be started or did not exit
  std::string out;  ///< its standard output
};

inline command_result run_capture(const std::string& cmd) {
  command_result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (const std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace sluice::test
