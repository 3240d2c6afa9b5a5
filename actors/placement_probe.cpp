#include "actors/placement_probe.hpp"

#include "actors/cpu_affinity.hpp"

#include <algorithm>
#include <cmath>
#include <latch>
#include <random>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "moe/recognizer/recognizer.hpp"

namespace sluice::actors {

namespace {

using clock = std::chrono::steady_clock;

// One workload: a few streams of a couple of seconds each, stepped together as a lane would.
constexpr int probe_streams = 4;
constexpr int64_t probe_frames = 200;  // input (10 ms) frames per stream: 2 s
// Typical raw log-mel values (dsp/ fbank of speech at a normal level).
constexpr float probe_mel_mean = -4.0f, probe_mel_spread = 2.0f;

std::vector<float> probe_features(int n_mels) {
  std::mt19937 rng(12345);
  std::normal_distribution<float> dist(probe_mel_mean, probe_mel_spread);
  std::vector<float> out(static_cast<std::size_t>(probe_frames * n_mels));
  for (auto& v : out) v = dist(rng);
  return out;
}

// Runs workloads until `deadline` (at least one); returns the input frames decoded.
int64_t run_until(const moe::recognizer_resources& res, const std::vector<float>& features,
                  clock::time_point deadline) {
  auto shared = std::shared_ptr<const moe::recognizer_resources>(&res, [](const moe::recognizer_resources*) {});
  moe::recognizer rec(shared);
  int64_t frames = 0;
  do {
    std::vector<moe::recognizer_stream> streams;
    for (int i = 0; i < probe_streams; ++i) {
      auto s = rec.create_stream();
      if (!s) return frames;
      if (!s->accept_features(features.data(), probe_frames) || !s->input_finished()) return frames;
      streams.push_back(std::move(*s));
    }
    std::vector<moe::recognizer_stream*> ptrs;
    for (auto& s : streams) ptrs.push_back(&s);
    while (std::any_of(streams.begin(), streams.end(), [](const auto& s) { return s.is_ready(); }))
      if (!rec.decode_streams(ptrs)) return frames;
    frames += probe_streams * probe_frames;
  } while (clock::now() < deadline);
  return frames;
}

double per_second(int64_t frames, clock::duration d) {
  const double s = std::chrono::duration<double>(d).count();
  return s > 0 ? static_cast<double>(frames) / s : 0.0;
}

}  // namespace

moe::device_speed probe_cpu(const moe::recognizer_resources& res, int units, std::chrono::milliseconds budget) {
  const auto features = probe_features(res.model->arch().n_mels);
  moe::device_speed d{"cpu", "cpu", std::max(units, 1), 0, 0};
  // A third of the budget on one core, a third on all of them (the rest: warm-up, threads).
  const auto phase = budget / 3;
  run_until(res, features, clock::now());  // warm-up: first allocations, caches
  auto t0 = clock::now();
  const int64_t one = run_until(res, features, t0 + phase);
  d.speed_one = per_second(one, clock::now() - t0);

  std::vector<int64_t> done(static_cast<std::size_t>(d.units), 0);
  std::latch ready(d.units + 1);
  std::latch go(1);
  clock::time_point deadline;
  std::vector<std::thread> threads;
  for (int i = 0; i < d.units; ++i)
    threads.emplace_back([&, i] {
      run_until(res, features, clock::now());  // warm-up on this thread
      ready.count_down();
      go.wait();
      done[static_cast<std::size_t>(i)] = run_until(res, features, deadline);
    });
  ready.arrive_and_wait();
  t0 = clock::now();
  deadline = t0 + phase;
  go.count_down();
  for (auto& t : threads) t.join();
  int64_t all = 0;
  for (auto n : done) all += n;
  d.speed_all = per_second(all, clock::now() - t0);
  return d;
}

result<moe::placement_plan> plan_this_machine(const moe::recognizer_resources& res, std::chrono::milliseconds budget) {
  // The CPUs this process may use (a taskset or a container's cpuset), not all of the machine's.
  const int cores = static_cast<int>(allowed_cpus().size());
  const auto n_routed = res.model->arch().n_routed;
  if (budget.count() <= 0) {
    auto plan = moe::plan_placement({{"cpu", "cpu", cores, 1.0, static_cast<double>(cores)}}, n_routed);
    if (plan) plan->measured = false;
    return plan;
  }
  return moe::plan_placement({probe_cpu(res, cores, budget)}, n_routed);
}

std::string describe(const moe::placement_plan& plan) {
  std::string out = std::to_string(plan.n_lanes()) + " lanes (" + (plan.measured ? "measured" : "nominal") + "):";
  for (std::size_t i = 0; i < plan.devices.size(); ++i) {
    const auto& d = plan.devices[i];
    out += " " + d.name + " " + std::to_string(plan.lanes_per_device[i]) + " of " + std::to_string(d.units) +
           " units, " + std::to_string(static_cast<int64_t>(d.speed_one)) + " frames/s on one, " +
           std::to_string(static_cast<int64_t>(d.speed_all)) + " on all, share " +
           std::to_string(static_cast<int>(std::lround(100 * plan.device_share[i]))) + "%, " +
           std::to_string(plan.experts_per_device[i]) + " experts/layer;";
  }
  out += plan.experts_local ? " every expert local to every lane" : " experts sharded over devices";
  return out;
}

std::string placement_json(const moe::placement_plan& plan) {
  using nlohmann::json;
  json devices = json::array();
  for (std::size_t i = 0; i < plan.devices.size(); ++i) {
    const auto& d = plan.devices[i];
    devices.push_back({{"name", d.name},
                       {"kind", d.kind},
                       {"units", d.units},
                       {"speed_one_frames_per_s", d.speed_one},
                       {"speed_all_frames_per_s", d.speed_all},
                       {"lanes", plan.lanes_per_device[i]},
                       {"share", plan.device_share[i]},
                       {"experts_per_layer", plan.experts_per_device[i]}});
  }
  json lanes = json::array();
  for (const auto& l : plan.lanes) lanes.push_back({{"device", l.device}, {"share", l.share}, {"frames_per_s", l.speed}});
  json j{{"measured", plan.measured},
         {"lanes", plan.n_lanes()},
         {"experts_local", plan.experts_local},
         {"total_frames_per_s", plan.total_speed},
         {"devices", devices},
         {"lane_plan", lanes}};
  return j.dump();
}

}  // namespace sluice::actors
