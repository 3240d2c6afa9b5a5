#include "actors/placement_probe.hpp"

#include "actors/cpu_affinity.hpp"
#include "config/cache_dir.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <latch>
#include <optional>
#include <sstream>
#include <random>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

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

namespace {

// The first "model name" of /proc/cpuinfo ("" where there is none).
std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 1);
    }
  return {};
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A kept probe of `key` for `units` cores younger than `max_age`, or nothing.
std::optional<moe::device_speed> read_kept(const std::string& path, const std::string& key, int units,
                                           std::chrono::seconds max_age) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("key", std::string()) != key) return std::nullopt;
  const auto written = j.value("written_unix_s", int64_t{-1});
  const auto age = unix_now() - written;
  if (written < 0 || age < -60 || age >= max_age.count()) return std::nullopt;
  const auto d = j.find("device");
  if (d == j.end() || !d->is_object()) return std::nullopt;
  moe::device_speed out{"cpu", "cpu", d->value("units", 0), d->value("speed_one", 0.0), d->value("speed_all", 0.0)};
  if (out.units != units || !std::isfinite(out.speed_one) || !(out.speed_one > 0) || !std::isfinite(out.speed_all) ||
      !(out.speed_all > 0))
    return std::nullopt;
  return out;
}

void keep(const std::string& path, const std::string& key, const moe::device_speed& d) {
  const auto text = nlohmann::json{{"key", key},
                                   {"written_unix_s", unix_now()},
                                   {"device", {{"units", d.units}, {"speed_one", d.speed_one}, {"speed_all", d.speed_all}}}}
                        .dump(2) + "\n";
  if (!config::write_cache_file(path, text)) spdlog::debug("placement: cannot keep the probe in {}", path);
}

// Busy time of `cpus` (from /proc/stat) and of this process (/proc/self/stat), in clock ticks:
// what tells a probe of an idle machine from one measured while other processes ran.
struct tick_sample {
  bool ok = false;
  uint64_t cpus_busy = 0;
  uint64_t self = 0;
};

tick_sample sample_ticks(const std::vector<int>& cpus) {
  tick_sample t;
  std::ifstream stat("/proc/stat");
  std::size_t seen = 0;
  for (std::string line; std::getline(stat, line);) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;
    std::istringstream in(line.substr(3));
    int id = -1;
    uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    in >> id >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    if (!in || std::find(cpus.begin(), cpus.end(), id) == cpus.end()) continue;
    t.cpus_busy += user + nice + system + irq + softirq + steal;
    ++seen;
  }
  std::ifstream self("/proc/self/stat");
  std::string all((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  const auto close = all.rfind(')');  // the command name may hold spaces; the fields follow it
  if (close == std::string::npos || seen != cpus.size()) return t;
  std::istringstream in(all.substr(close + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 13 && in >> field; ++i) {}  // state .. cmajflt (fields 3-13)
  in >> utime >> stime;                            // fields 14, 15
  if (!in) return t;
  t.self = utime + stime;
  t.ok = true;
  return t;
}

}  // namespace

double others_busy_share(const std::vector<int>& cpus, const std::function<void()>& work) {
  const auto a = sample_ticks(cpus);
  const auto t0 = clock::now();
  work();
  const double wall = std::chrono::duration<double>(clock::now() - t0).count();
  const auto b = sample_ticks(cpus);
  if (!a.ok || !b.ok || wall <= 0) return -1;
  const double window = wall * static_cast<double>(::sysconf(_SC_CLK_TCK)) * static_cast<double>(cpus.size());
  const double others = static_cast<double>(b.cpus_busy - a.cpus_busy) - static_cast<double>(b.self - a.self);
  // Ticks are counted per CPU at the clock-tick rate: two ticks of slack for the rounding.
  return std::max(0.0, others - 2.0) / window;
}

std::string probe_key(const moe::recognizer_resources& res, std::chrono::milliseconds budget) {
  const auto& a = res.model->arch();
  std::string key = "sluice-placement-probe/1;cpu=" + cpu_model_name() + ";cores=";
  for (int c : allowed_cpus()) key += std::to_string(c) + ",";
  for (int v : {a.n_mels, a.vocab_size, a.d_model, a.n_heads, a.n_layers, a.conv_channels, a.n_shared, a.shared_hidden,
                a.n_routed, a.n_groups, a.top_groups, a.top_k, a.expert_hidden, a.ctx_frames, a.chunk_frames,
                a.left_chunks, a.subsampling})
    key += ";" + std::to_string(v);
  key += ";budget_ms=" + std::to_string(budget.count());
  // A probe measured with f32 products says nothing about bf16 ones (model.math), and back.
  key += res.compute.bf16 ? ";math=bf16" : ";math=f32";
  return key;
}

probe_cache probe_cache::user_default(int hours) {
  if (hours <= 0) return {};
  std::string dir = config::user_cache_dir();
  if (dir.empty()) return {};
  return {dir, std::chrono::hours(hours)};
}

namespace {
// The file of a probe of `key` ("" when the cache is off).
std::string file_of_key(const probe_cache& cache, const std::string& key) {
  if (cache.dir.empty() || cache.max_age.count() <= 0) return {};
  return config::cache_file(cache.dir, "placement", fnv1a(key), ".json");
}
}  // namespace

std::string probe_cache_file(const probe_cache& cache, const moe::recognizer_resources& res,
                             std::chrono::milliseconds budget) {
  return file_of_key(cache, probe_key(res, budget));
}

result<moe::placement_plan> plan_this_machine(const moe::recognizer_resources& res, std::chrono::milliseconds budget,
                                              const probe_cache& cache) {
  // The CPUs this process may use (a taskset or a container's cpuset), not all of the machine's.
  const int cores = static_cast<int>(allowed_cpus().size());
  const auto n_routed = res.model->arch().n_routed;
  if (budget.count() <= 0) {
    auto plan = moe::plan_placement({{"cpu", "cpu", cores, 1.0, static_cast<double>(cores)}}, n_routed);
    if (plan) plan->measured = false;
    return plan;
  }
  const std::string key = probe_key(res, budget);
  const std::string path = file_of_key(cache, key);
  if (!path.empty())
    if (auto kept = read_kept(path, key, cores, cache.max_age)) {
      spdlog::info("placement: the probe kept in {} (younger than {} h; engine.placement_cache_hours = 0 probes again)",
                   path, std::chrono::duration_cast<std::chrono::hours>(cache.max_age).count());
      return moe::plan_placement({*kept}, n_routed);
    }
  moe::device_speed measured;
  const double others = others_busy_share(allowed_cpus(), [&] { measured = probe_cpu(res, cores, budget); });
  if (!path.empty() && measured.speed_one > 0 && measured.speed_all > 0) {
    // A probe measured while other processes used the cores says how busy the machine was, not
    // how fast it is: used for this start, not kept for later ones.
    if (others >= 0 && others <= max_others_share_kept) keep(path, key, measured);
    else spdlog::info("placement: other processes used {:.0f}% of the cores during the probe: not kept for later starts",
                      others < 0 ? 100.0 : 100.0 * others);
  }
  return moe::plan_placement({measured}, n_routed);
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
