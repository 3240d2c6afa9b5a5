// engine_bench: many channels of real audio through the actor engine.
//
//   engine_bench [--model DIR] [--audio WAV] [--channels N,N,...] [--repeats R] [--live-s S]
//                [--lanes K] [--sections offline,live,mixed,skew] [--mixed-live N] [--mixed-jobs J]
//                [--poll-sleep-us US] ([engine] scheduler_poll_sleep_us)
//                [--lane-decoding 0|1] [--lane-backend cpu|device_cpu|cuda]
//
// --lanes K runs the engines of sections 1-3 with [engine] lanes = K (-1, the engine's default:
// the placement plan's count; 0: the batcher with expert actors; K > 0: K lanes); --sections
// picks the parts. --lane-backend sets [engine] lane_backend (cuda: the lanes' model steps on
// GPUs, the live section's ceiling on one).
//
// 1. Offline throughput: every channel's VAD utterances pushed as fast as possible (the
//    `sluice transcribe` path), against the same work done single-threaded without actors in
//    the same run (forward_offline + the engine's decoder per utterance): audio seconds per second of
//    each, and the ratio; min and median of R repeats. Variants: f32 blocks with the two-half
//    overlap, without it, and FP8 blocks (bytes per dispatched token of each; lanes send no
//    blocks, so there the variants differ only in the overlap split).
// 2. Live: N channels fed 20 ms packets of 8 kHz PCM16 paced in real time (the call repeated,
//    each channel starting at its own offset), for each N in --channels: p50/p99 partial and
//    final latency (final: from the utterance's last audio to its final result), queue wait,
//    whether every channel kept real time (p99 final <= 800 ms).
// 3. Mixed: --mixed-live N live channels as in 2, alone, then with --mixed-jobs J offline jobs
//    (file channels fed whole segments, each replaced when it finishes) in the same engine: with
//    both of the engine's live-first rules ([engine] live_priority, offline_nice = 10), with the
//    batch order only (offline_nice = 0), with neither: the live channels' latency, the offline
//    work's speed (audio seconds finished per second during the live period) and the process's
//    CPU use.
// 4. Skewed routers (group 0's experts favoured in every layer) on 4 shards, lanes = 0 (the
//    spillway serves the batcher): expert load max/mean before and after the spillway,
//    spilled/rerouted/dropped counts.
//
// Prints a table; --json FILE also writes every figure.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/allocator.hpp"
#include "actors/engine.hpp"
#include "dsp/audio_file.hpp"
#include "dsp/file_speech.hpp"
#include "moe/decoder/ctc_decoder.hpp"
#include "moe/forward.hpp"

using namespace sluice;
using json = nlohmann::json;
using clk = std::chrono::steady_clock;

namespace {

constexpr double real_time_p99_ms = 800.0;
constexpr int packet_ms = 20;

struct utterance {
  int channel;
  int64_t start;
  std::vector<float> samples;
};

double seconds_since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double reference_run(const actors::engine_resources& res, const std::vector<utterance>& utts) {
  const auto t0 = clk::now();
  moe::workspace ws;
  for (const auto& u : utts) {
    auto f = res.fbank->compute(u.samples);
    auto fwd = moe::forward_offline(*res.model, f.data(), static_cast<int64_t>(f.size() / res.fbank->num_mels()), {}, &ws);
    auto dec = moe::ctc_decoder::create(res.decoder_mode, res.model->tokens(), res.decoder, res.lm.get(),
                                        moe::lexicon_view(res.lexicon.get(), nullptr));
    if (fwd->n_frames > 0) (void)dec->accept(fwd->logits, static_cast<int32_t>(fwd->n_frames));
    (void)dec->finalize();
  }
  return seconds_since(t0);
}

struct engine_run {
  double wall_s = 0;
  json snapshot;  // the metrics snapshot after the run
  json summary;
  json latency;

  /// A latency percentile of a live run (ms; 0 when that histogram saw nothing).
  double ms(const char* histogram, const char* percentile) const {
    return latency.contains(histogram) ? latency[histogram][percentile].get<double>() : 0.0;
  }
  /// Every channel kept real time: p99 final within real_time_p99_ms, and all drained within 5 s
  /// of a `seconds`-long run.
  bool real_time(double seconds) const;
};

bool engine_run::real_time(double seconds) const {
  return ms("final_latency_ms", "p99_ms") <= real_time_p99_ms && wall_s < seconds + 5;
}

// Ends every channel, waits for all of them to drain (at most 120 s), then lets a few metrics
// reports land and takes the snapshot.
engine_run finish_run(actors::engine& e, caf::scoped_actor& self, const std::vector<actors::channel_actor_type>& chans,
                      clk::time_point t0, const char* what) {
  for (auto& c : chans) self->send(c, actors::end_atom::value);
  std::size_t drained = 0;
  bool stuck = false;
  while (drained < chans.size() && !stuck)
    self->receive([&](actors::transcript_event&) {}, [&](actors::drained_atom, actors::channel_id) { ++drained; },
                  caf::after(std::chrono::seconds(120)) >> [&] { stuck = true; });
  if (stuck) std::fprintf(stderr, "%s run: %zu of %zu channels drained within 120 s\n", what, drained, chans.size());
  engine_run out;
  out.wall_s = seconds_since(t0);
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * e.resources().cfg.engine.report_ms));
  out.snapshot = json::parse(e.fresh_snapshot());
  out.summary = out.snapshot["summary"];
  return out;
}

// Every utterance of `copies` copies of the call, as fast as the engine takes them.
engine_run offline_run(std::shared_ptr<const actors::engine_resources> res, const std::vector<utterance>& utts,
                       int copies) {
  auto e = actors::engine::start(res);
  caf::scoped_actor self{e->system()};
  std::vector<actors::channel_actor_type> chans;
  const auto t0 = clk::now();
  for (int c = 0; c < copies; ++c) {
    actors::channel_actor_type ch[2];
    for (int k = 0; k < 2; ++k) {
      actors::channel_request req;
      req.partials = false;
      req.offline = true;
      auto r = e->open(req, caf::actor_cast<caf::actor>(self));
      ch[k] = r.handle;
      chans.push_back(r.handle);
    }
    for (const auto& u : utts) self->send(ch[u.channel], actors::segment_atom::value, u.samples, u.start);
  }
  return finish_run(*e, self, chans, t0, "offline");
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Offline work beside live channels: `jobs` file channels kept in flight, each given every
// utterance of the call's first channel as segments and ended at once; a drained one is
// replaced by a new one until the live period is over.
struct offline_feed {
  const std::vector<utterance>* utts = nullptr;
  int jobs = 0;
  double audio_s_per_job = 0;
  std::map<actors::channel_id, actors::channel_actor_type> open;
  int finished = 0;  // jobs drained within the live period
};

// n channels, paced: each gets a 20 ms PCM16 packet every 20 ms; with `feed`, offline jobs run
// beside them in the same engine.
engine_run live_run(std::shared_ptr<const actors::engine_resources> res, const std::vector<float>& x8k, int n,
                    double seconds, offline_feed* feed = nullptr) {
  auto e = actors::engine::start(res);
  caf::scoped_actor self{e->system()};
  std::vector<actors::channel_actor_type> chans;
  bool refilling = true;
  const auto start_job = [&] {
    actors::channel_request req;
    req.partials = false;
    req.offline = true;
    auto r = e->open(req, caf::actor_cast<caf::actor>(self));
    if (!r.ok) return;
    for (const auto& u : *feed->utts)
      if (u.channel == 0) self->send(r.handle, actors::segment_atom::value, u.samples, u.start);
    self->send(r.handle, actors::end_atom::value);
    feed->open.emplace(r.channel, r.handle);
  };
  const auto on_drained = [&](actors::channel_id id) {
    if (!feed || feed->open.erase(id) == 0) return;
    if (refilling) {
      ++feed->finished;
      start_job();
    }
  };
  for (int c = 0; c < n; ++c) {
    actors::channel_request req;
    req.sample_rate = 8000;
    req.codec = "pcm_s16le";
    auto r = e->open(req, caf::actor_cast<caf::actor>(self));
    if (!r.ok) {
      std::fprintf(stderr, "channel %d refused: %s\n", c, r.reason.c_str());
      break;
    }
    chans.push_back(r.handle);
  }
  const std::size_t per_packet = 8000 * packet_ms / 1000;
  const auto packets = static_cast<std::size_t>(seconds * 1000 / packet_ms);
  const double cpu0 = cpu_seconds();
  const auto t0 = clk::now();
  if (feed)
    for (int j = 0; j < feed->jobs; ++j) start_job();
  for (std::size_t p = 0; p < packets; ++p) {
    for (std::size_t c = 0; c < chans.size(); ++c) {
      // Each channel plays the call from its own offset, so utterances do not all end together.
      const std::size_t off = (c * 7919 * per_packet + p * per_packet) % (x8k.size() - per_packet);
      std::vector<uint8_t> bytes(per_packet * 2);
      for (std::size_t i = 0; i < per_packet; ++i) {
        const auto v = static_cast<int16_t>(std::lround(std::clamp(x8k[off + i], -1.0f, 1.0f) * 32767.0f));
        bytes[2 * i] = static_cast<uint8_t>(v & 0xFF);
        bytes[2 * i + 1] = static_cast<uint8_t>((v >> 8) & 0xFF);
      }
      self->send(chans[c], actors::audio_atom::value, std::move(bytes));
    }
    std::this_thread::sleep_until(t0 + std::chrono::milliseconds((p + 1) * packet_ms));
    for (bool more = true; more;)
      self->receive([](actors::transcript_event&) {}, [&](actors::drained_atom, actors::channel_id id) { on_drained(id); },
                    caf::after(std::chrono::milliseconds(0)) >> [&] { more = false; });
  }
  refilling = false;
  const double live_wall = seconds_since(t0), live_cpu = cpu_seconds() - cpu0;
  // Offline jobs still running: finish_run waits for their drained messages too (they were
  // ended already; a channel ignores a second end).
  if (feed)
    for (const auto& [id, h] : feed->open) chans.push_back(h);
  auto out = finish_run(*e, self, chans, t0, "live");
  out.summary["live_period_cpu_share"] = live_cpu / live_wall;
  if (feed) {
    out.summary["offline_x_real_time"] = feed->finished * feed->audio_s_per_job / live_wall;
    // Offline channels run detached: the engine's actor system waits, when it is destroyed,
    // for their threads, which end only once no handle to them is left.
    feed->open.clear();
  }
  out.latency = out.snapshot["kinds"]["channel"]["latency"];
  out.latency["queue_wait_ms"] = out.snapshot["kinds"]["batcher"]["latency"]["queue_wait_ms"];
  return out;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const auto j = s.find(',', i);
    out.push_back(std::stoi(s.substr(i, j == std::string::npos ? std::string::npos : j - i)));
    if (j == std::string::npos) break;
    i = j + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  actors::tune_allocator();  // as `sluice` does
  std::string model_dir = "models/default", audio = "tests/data/sample_call_8k_mulaw_stereo.wav", json_out;
  std::vector<int> live_channels = {16, 64, 128};
  int repeats = 3, copies = 8;
  double live_s = 20;
  int lanes = -1;
  int mixed_live = 128, mixed_jobs = 4;
  bool lane_decoding = config::sluice_config{}.engine.lane_decoding;
  int poll_sleep_us = config::sluice_config{}.engine.scheduler_poll_sleep_us;
  auto lane_backend = config::lane_backend::cpu;
  std::string sections = "offline,live,mixed,skew";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--model") model_dir = v;
    else if (a == "--audio") audio = v;
    else if (a == "--channels") live_channels = parse_list(v);
    else if (a == "--repeats") repeats = std::stoi(v);
    else if (a == "--copies") copies = std::stoi(v);
    else if (a == "--live-s") live_s = std::stod(v);
    else if (a == "--json") json_out = v;
    else if (a == "--lanes") lanes = std::stoi(v);
    else if (a == "--sections") sections = v;
    else if (a == "--mixed-live") mixed_live = std::stoi(v);
    else if (a == "--mixed-jobs") mixed_jobs = std::stoi(v);
    else if (a == "--lane-decoding") lane_decoding = v != "0" && v != "false";
    else if (a == "--poll-sleep-us") poll_sleep_us = std::stoi(v);
    else if (a == "--lane-backend") {
      bool known = false;
      for (const auto& [value, name] : config::lane_backend_names)
        if (name == v) lane_backend = value, known = true;
      if (!known) {
        std::fprintf(stderr, "--lane-backend: cpu, device_cpu or cuda, not %s\n", v.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  config::sluice_config cfg;
  cfg.model.dir = model_dir;
  cfg.engine.lanes = lanes;
  cfg.engine.lane_decoding = lane_decoding;
  cfg.engine.scheduler_poll_sleep_us = poll_sleep_us;
  cfg.engine.lane_backend = lane_backend;
  const auto section = [&](const char* name) { return ("," + sections + ",").find("," + std::string(name) + ",") != std::string::npos; };
  auto model = moe::load_model(model_dir);
  if (!model) {
    std::fprintf(stderr, "%s\n", model.error().message.c_str());
    return 1;
  }
  auto speech = dsp::prepare_file(audio, cfg);
  auto raw = dsp::decode_audio_file(audio);
  if (!speech || !raw) {
    std::fprintf(stderr, "cannot read %s\n", audio.c_str());
    return 1;
  }
  std::vector<utterance> utts;
  double audio_s = 0;
  for (std::size_t ch = 0; ch < speech->channels.size() && ch < 2; ++ch)
    for (const auto& r : speech->channels[ch].regions) {
      utts.push_back({static_cast<int>(ch), r.start_sample,
                      std::vector<float>(speech->channels[ch].samples.begin() + r.start_sample,
                                         speech->channels[ch].samples.begin() + r.end_sample)});
      audio_s += static_cast<double>(r.end_sample - r.start_sample) / dsp::model_sample_rate;
    }
  json report;
  report["audio"] = audio;
  report["speech_s_per_copy"] = audio_s;
  report["hardware_threads"] = std::thread::hardware_concurrency();
  report["lanes"] = lanes;
  report["lane_backend"] = std::string(config::enum_name(lane_backend));

  auto make = [&](auto tweak) {
    auto c = cfg;
    tweak(c);
    return *actors::engine_resources::create(c, *model);
  };
  auto base = make([](config::sluice_config&) {});

  // 1. Offline throughput.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (section("offline")) {
  std::printf("== offline: %d copies of the call, %.1f s of speech each (%d repeats)\n", copies, audio_s, repeats);
  std::vector<double> ref_t;
  for (int r = 0; r < repeats; ++r) {
    double t = 0;
    for (int c = 0; c < copies; ++c) t += reference_run(*base, utts);
    ref_t.push_back(t);
  }
  const double total_audio = audio_s * copies;
  const double ref_min = *std::min_element(ref_t.begin(), ref_t.end()), ref_med = median(ref_t);
  std::printf("%-34s %10s %10s %10s %12s\n", "path", "x RT min", "x RT med", "vs ref", "bytes/token");
  std::printf("%-34s %10.1f %10.1f %10s %12s\n", "single-threaded reference", total_audio / ref_min,
              total_audio / ref_med, "1.00", "-");
  report["reference"] = {{"wall_s_min", ref_min}, {"wall_s_median", ref_med}};
  struct variant {
    const char* name;
    bool overlap, fp8;
  };
  for (const variant v : {variant{"engine f32, overlap", true, false}, variant{"engine f32, no overlap", false, false},
                          variant{"engine fp8, overlap", true, true}}) {
    auto res = make([&](config::sluice_config& c) {
      c.engine.overlap = v.overlap;
      c.engine.fp8_dispatch = v.fp8;
    });
    std::vector<double> t;
    json last;
    for (int r = 0; r < repeats; ++r) {
      auto run = offline_run(res, utts, copies);
      t.push_back(run.wall_s);
      last = run.summary;
    }
    const double mn = *std::min_element(t.begin(), t.end()), md = median(t);
    std::printf("%-34s %10.1f %10.1f %10.2f %12.0f\n", v.name, total_audio / mn, total_audio / md, ref_med / md,
                last["bytes_per_token_sent"].get<double>());
    report["offline"][v.name] = {{"wall_s_min", mn},       {"wall_s_median", md},         {"speed_vs_reference_median", ref_med / md},
                                 {"summary", last}};
  }
  const auto& s0 = report["offline"]["engine f32, overlap"]["summary"];
  std::printf("padding waste %.3f (a padded batch would have wasted %.3f); mean batch %.1f streams, %.0f tokens\n",
              s0["padding_waste"].get<double>(), s0["padding_avoided"].get<double>(),
              s0["mean_batch_streams"].get<double>(), s0["mean_batch_tokens"].get<double>());
  std::printf("expert load max/mean (per dispatch, shards + spillway) before %.2f after %.2f; spilled %.0f "
              "rerouted %.0f kept %.0f dropped %.0f of %.0f pairs\n",
              s0["expert_load_max_mean_before"].get<double>(), s0["expert_load_max_mean_after"].get<double>(),
              s0["spilled"].get<double>(), s0["rerouted"].get<double>(), s0["kept_over_capacity"].get<double>(),
              s0["dropped"].get<double>(), s0["pairs"].get<double>());
  }

  // 2. Live, paced.
  if (section("live")) {
  std::printf("\n== live: channels of 8 kHz PCM16 in 20 ms packets, paced, %.0f s each\n", live_s);
  std::printf("%8s %10s %10s %10s %10s %10s %8s\n", "channels", "partial50", "partial99", "final50", "final99",
              "qwait99", "realtime");
  for (int n : live_channels) {
    auto res = make([&](config::sluice_config& c) { c.engine.max_channels = std::max(n, c.engine.max_channels); });
    auto run = live_run(res, raw->channels[0], n, live_s);
    const bool rt = run.real_time(live_s);
    std::printf("%8d %10.0f %10.0f %10.0f %10.0f %10.0f %8s\n", n, run.ms("partial_latency_ms", "p50_ms"),
                run.ms("partial_latency_ms", "p99_ms"), run.ms("final_latency_ms", "p50_ms"),
                run.ms("final_latency_ms", "p99_ms"), run.ms("queue_wait_ms", "p99_ms"), rt ? "yes" : "no");
    report["live"][std::to_string(n)] = {{"latency", run.latency}, {"wall_s", run.wall_s}, {"real_time", rt},
                                         {"summary", run.summary}};
  }
  }

  // 3. Live and offline in one engine: live channels alone, then with offline jobs beside them
  //    under both live-first rules, the batch order only, and neither.
  if (section("mixed")) {
    std::printf("\n== mixed: %d live channels, %d offline jobs in flight (the call's first channel as segments), %.0f s\n",
                mixed_live, mixed_jobs, live_s);
    std::printf("%-30s %10s %10s %10s %8s %12s %8s\n", "run", "partial99", "final50", "final99", "realtime",
                "offline xRT", "CPU %");
    offline_feed feed;
    feed.utts = &utts;
    feed.jobs = mixed_jobs;
    for (const auto& u : utts)
      if (u.channel == 0) feed.audio_s_per_job += static_cast<double>(u.samples.size()) / dsp::model_sample_rate;
    struct mixed_variant {
      const char* name;
      bool offline, priority;
      int nice;
    };
    for (const auto v : {mixed_variant{"live alone", false, true, 10},
                         mixed_variant{"+ offline (priority, nice 10)", true, true, 10},
                         mixed_variant{"+ offline (priority, nice 0)", true, true, 0},
                         mixed_variant{"+ offline (neither)", true, false, 0}}) {
      auto res = make([&](config::sluice_config& c) {
        c.engine.max_channels = std::max(mixed_live + mixed_jobs + 8, c.engine.max_channels);
        c.engine.live_priority = v.priority;
        c.engine.offline_nice = v.nice;
      });
      feed.open.clear();
      feed.finished = 0;
      auto run = live_run(res, raw->channels[0], mixed_live, live_s, v.offline ? &feed : nullptr);
      const bool rt = run.real_time(live_s);
      const double xrt = run.summary.value("offline_x_real_time", 0.0);
      std::printf("%-30s %10.0f %10.0f %10.0f %8s %12.1f %8.0f\n", v.name, run.ms("partial_latency_ms", "p99_ms"),
                  run.ms("final_latency_ms", "p50_ms"), run.ms("final_latency_ms", "p99_ms"), rt ? "yes" : "no", xrt,
                  100.0 * run.summary.value("live_period_cpu_share", 0.0));
      report["mixed"][v.name] = {{"latency", run.latency}, {"wall_s", run.wall_s}, {"real_time", rt}, {"offline_x_real_time", xrt},
                                 {"offline_jobs_finished", feed.finished}, {"summary", run.summary}};
    }
  }

  // 4. Skewed routers: the spillway serves the batcher, so these engines run with lanes = 0
  //    whatever --lanes says.
  if (section("skew")) {
  auto skewed = std::make_shared<moe::acoustic_model>((*model)->manifest(), (*model)->tokens(), (*model)->weights());
  auto& w = const_cast<moe::model_weights&>(skewed->weights());
  const int per_group = skewed->arch().n_routed / skewed->arch().n_groups;
  for (auto& b : w.blocks) {
    b.moe.group_bias[0] += 100.0f;
    for (int e = 0; e < per_group; ++e) b.moe.expert_bias[static_cast<std::size_t>(e)] += 100.0f;
  }
  std::printf("\n== skewed routers (every token to group 0), 4 shards, capacity 1.25x, 4 hot replicas\n");
  for (const auto overflow : {config::overflow_policy::keep, config::overflow_policy::reroute}) {
    const std::string policy(config::enum_name(overflow));
    auto c = cfg;
    c.engine.lanes = 0;
    c.engine.expert_shards = 4;
    c.engine.overflow = overflow;
    c.engine.rebalance_ms = 100;
    auto res = *actors::engine_resources::create(c, skewed);
    auto run = offline_run(res, utts, copies);
    const auto& s = run.summary;
    std::printf("overflow=%-8s load max/mean before %.2f after %.2f; spilled %.0f rerouted %.0f kept %.0f dropped %.0f "
                "of %.0f pairs\n",
                policy.c_str(), s["expert_load_max_mean_before"].get<double>(), s["expert_load_max_mean_after"].get<double>(),
                s["spilled"].get<double>(), s["rerouted"].get<double>(), s["kept_over_capacity"].get<double>(),
                s["dropped"].get<double>(), s["pairs"].get<double>());
    report["skew"][policy] = s;
  }
  }
  if (!json_out.empty()) std::ofstream(json_out) << report.dump(2) << "\n";
  return 0;
}
