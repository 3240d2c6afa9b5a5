#pragma once
// This process's threads as the kernel lists them (/proc/self/task): what tests of thread naming,
// pinning and nice values read back, independent of the engine's own bookkeeping. Linux only.
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sluice::test {

struct proc_thread {
  pid_t tid = 0;
  std::string name;  ///< /proc/self/task/<tid>/comm, without its newline
};

/// Every thread of this process now, with its name.
inline std::vector<proc_thread> threads_of_this_process() {
  std::vector<proc_thread> out;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    proc_thread p;
    p.tid = static_cast<pid_t>(std::stoi(t.path().filename().string()));
    std::ifstream comm(t.path() / "comm");
    std::getline(comm, p.name);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace sluice::test
