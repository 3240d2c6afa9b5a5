#include "actors/cpu_affinity.hpp"

#include <algorithm>
#include <thread>

#if defined(__linux__)
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#endif

namespace sluice::actors {

std::vector<int> allowed_cpus() {
  std::vector<int> out;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) out.push_back(c);
#endif
  if (out.empty()) {
    const int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (int c = 0; c < n; ++c) out.push_back(c);
  }
  return out;
}

int lane_cpu(int lane, int lanes, const std::vector<int>& cpus) {
  if (lane < 0 || lanes <= 0 || lane >= lanes || static_cast<std::size_t>(lanes) != cpus.size()) return -1;
  return cpus[static_cast<std::size_t>(lane)];
}

std::string pin_current_thread(int cpu) {
#if defined(__linux__)
  if (cpu < 0 || cpu >= CPU_SETSIZE) return "no such CPU " + std::to_string(cpu);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  return rc == 0 ? std::string() : std::string(std::strerror(rc));
#else
  (void)cpu;
  return "thread affinity is not supported on this OS";
#endif
}

void name_current_thread(const std::string& name) {
#if defined(__linux__)
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
#else
  (void)name;
#endif
}

bool nice_current_thread(int nice) {
#if defined(__linux__)
  return setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice) == 0;
#else
  (void)nice;
  return false;
#endif
}

}  // namespace sluice::actors
