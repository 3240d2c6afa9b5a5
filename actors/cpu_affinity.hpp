#pragma once
/// The CPUs this process may run on, and pinning a lane's thread to one of them (issue 11:
/// "threads pinned where the OS allows"). Linux: sched_getaffinity / pthread_setaffinity_np, so a
/// cpuset (taskset, a container's cgroup) is honoured; elsewhere every core counts and nothing
/// is pinned.
#include <string>
#include <vector>

namespace sluice::actors {

/// The CPUs the calling thread may run on, ascending (at least one entry).
std::vector<int> allowed_cpus();

/// The CPU lane `lane` of `lanes` is pinned to, given the allowed CPUs: cpus[lane] when there is
/// exactly one lane per allowed CPU, else -1 (not pinned: with fewer lanes than CPUs the OS
/// balances them better against the other threads and processes than a fixed choice would; with
/// more, two lanes would share a core).
int lane_cpu(int lane, int lanes, const std::vector<int>& cpus);

/// Pins the calling thread to `cpu`; "" on success, else why not.
std::string pin_current_thread(int cpu);

/// Names the calling thread (at most 15 bytes are kept), for top -H, perf and /proc/<pid>/task.
void name_current_thread(const std::string& name);

/// Sets the calling thread's nice value (Linux: per thread); false when the OS refuses.
bool nice_current_thread(int nice);

}  // namespace sluice::actors
