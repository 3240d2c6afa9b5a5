#pragma once
#include <string>

#include "config/enum_field.hpp"
#include "config/field.hpp"
#include "config/lane_backend.hpp"
#include "config/overflow_policy.hpp"

namespace sluice::config {

/// [engine]: the actor engine (actors/): batching, lanes, expert shards, spillway, admission.
/// overlap, expert_shards, dedicated_expert_threads, spillways, capacity_factor, overflow,
/// hot_replicas, rebalance_ms, fp8_dispatch and expert_timeout_ms apply to the batcher with
/// expert actors (lanes = 0) only.
struct engine_config {
  /// How long the batcher gathers feature chunks before it starts a micro-batch (ms).
  int batch_window_ms = 30;
  /// Most subsampled (40 ms) frames, summed over streams, in one micro-batch.
  int token_budget = 2048;
  /// Most attention chunks one stream gives to one step (1 = lowest latency; files take more).
  int max_chunks_per_step = 4;
  /// Size and write the scratch buffers of the batcher (or lanes) and expert actors at start for
  /// the largest micro-batch (max of token_budget and one stream's max_chunks_per_step chunks),
  /// so resident memory does not creep up under load. With the default model and budget: about
  /// 50 MB per batcher, 30 MB per lane, 13 MB per expert actor or spillway. Off by default: with
  /// it on, RTSP pull tests lost the start of their calls under ASan with -j2 (cause not found).
  bool preallocate = false;
  /// Split each micro-batch in two so one half's dense work overlaps the other's expert work.
  bool overlap = true;
  /// Lanes: actors that each run the dense layers and every routed expert of their utterances'
  /// micro-batches on their own thread (each new utterance goes to the lane with the least
  /// outstanding work) (no expert actor, no token block: on one machine every
  /// expert is local). -1 (the default): as many as the placement plan chooses
  /// (placement_probe_ms; a lane per core on one CPU). 0: one batcher with expert actors and
  /// spillways (expert_shards; for experts placed on other devices or processes).
  int lanes = -1;
  /// What each lane runs its model steps on: "cpu" (its own CPU forward), "device_cpu" (the
  /// device forward, moe::device_model, on the CPU backend: the same results through the code a
  /// GPU lane runs) or "cuda" (the device forward on a GPU: lane i on GPU i mod their count). The
  /// device forward needs the model's trained attention window. No effect with lanes = 0.
  config::lane_backend lane_backend = config::lane_backend::cpu;
  /// Pin each lane's thread to a core of its own when there is exactly one lane per core this
  /// process may use (its CPU affinity: taskset, a container's cpuset); with fewer or more lanes
  /// than cores, or where the OS has no thread affinity, lanes are not pinned. Off by default:
  /// two engines on one host would pin their lanes to the same cores, and on 2 cores pinning
  /// measured no gain (README); turn it on where one engine owns its cores.
  bool pin_lanes = false;
  /// The start-up benchmark of the CPU that the placement plan (lanes, expert placement,
  /// GET /v1/placement) is chosen from, in ms all told; 0 skips it (nominal plan: a lane per core).
  /// It runs only when lanes = -1: an explicit lane count needs no plan to choose one.
  int placement_probe_ms = 300;
  /// Hours a probe's result is reused by later starts on this machine (the same CPU model, the
  /// same allowed cores, model architecture and probe budget): kept in
  /// $XDG_CACHE_HOME/sluice (else ~/.cache/sluice) as placement-<key>.json, so a `sluice
  /// transcribe` per file does not pay the probe every time. 0: probe at every start.
  int placement_cache_hours = 24;
  /// Live streams first: a micro-batch takes every waiting live stream before any offline one
  /// (file and upload segments), which only fill what is left of token_budget.
  bool live_priority = true;
  /// Offline work (files, uploads) waits for the gathering window like live work even on a lane
  /// with no live stream. Off (the default): there it is stepped as soon as it arrives, since its
  /// audio is all there and waiting only idles the lane (a one-core `sluice transcribe` of one
  /// file at a time ran at 83% CPU, session 37); beside a live stream it waits either way.
  bool offline_gather = false;
  /// Offline utterances (of channels opened as offline: files, uploads, file segments) are decoded
  /// (CTC search, word LM, hotwords) on the lane that ran their model steps rather than on their
  /// channel's thread: a file's utterances are spread over the lanes, so its decoding is too,
  /// where one channel thread decoded a whole file. That decoding then runs at the lanes'
  /// priority, not offline_nice, after the live results of each step are out. Live utterances
  /// are decoded by their channels either way; no effect with lanes = 0. Off by default: on 2
  /// cores it made no file faster, and beside 384 live channels it doubled their median final
  /// latency (75 -> 150 ms; p99 300 ms either way). For many cores and few long files.
  bool lane_decoding = false;
  /// Offline channels (files, uploads) each run on a thread of their own at this nice value: under
  /// contention each gets a lower CPU weight than live channels and lanes (nice 10: about a
  /// tenth of a nice-0 thread's; many of them together still take a real share). 0: on the
  /// shared scheduler, like live ones. Upload decoding and VAD still run at normal priority, and
  /// so does the decoding of their utterances with lane_decoding.
  int offline_nice = 10;
  /// Expert actors; the routed experts of every layer are split over them in contiguous runs.
  int expert_shards = 2;
  /// Each expert actor on its own thread (a pinned core set); false: on the shared scheduler.
  bool dedicated_expert_threads = true;
  /// Spillway actors taking the pairs over a shard's capacity for the hottest experts.
  int spillways = 1;
  /// A shard's capacity per micro-batch and layer: this times its fair share of the pairs.
  double capacity_factor = 1.25;
  /// Pairs over a shard's capacity whose expert has no spillway replica: keep them on their
  /// shard (exact: the text never depends on the batch) or reroute them to the token's
  /// next-best expert with room (bounded shard work, slightly different output).
  overflow_policy overflow = overflow_policy::keep;
  /// Experts per layer replicated on the spillways: the hottest by moving-average load.
  int hot_replicas = 4;
  /// How often the hot set is re-chosen from the moving average of load (ms).
  int rebalance_ms = 1000;
  /// Send token blocks as FP8 E4M3 with one f32 scale per 128 values (replies stay f32).
  bool fp8_dispatch = false;
  /// An expert reply later than this fails the block over to a spillway (ms).
  int expert_timeout_ms = 2000;
  /// Channels admitted at once; past it, new channels are refused with the reason.
  int max_channels = 256;
  /// `sluice transcribe` opens its next file when the file's channels fit beside the open ones
  /// within this many (and max_channels); a file with more opens alone. 0: four per lane. Every
  /// open file holds its decoded audio, its segments in flight and two threads (its channel's and
  /// its feeder's). Measured in session 37 on 2 cores against opening every file at once: 64
  /// copies of the bundled call 0-10% faster on one core, the same on two; 16 half-hour calls
  /// 1.93 instead of 2.15 GB peak memory, the same transcripts.
  int offline_channels = 0;
  /// New channels are refused while ready live audio waits longer than this for the batcher or a
  /// lane (ms; offline streams wait behind live ones on purpose and are not counted).
  int max_queue_wait_ms = 500;
  /// How often every actor reports its figures to the metrics actor (ms).
  int report_ms = 500;
  /// CAF scheduler threads (0: one per core).
  int scheduler_threads = 0;
  /// How long an idle CAF scheduler thread sleeps between its moderate polls for work (µs;
  /// CAF's own default is 50). It bounds how late an idle thread picks up work queued on a busy
  /// one; at 50 µs the idle threads' wake-ups took ~15% of the CPU of a transcribe on 2 cores.
  int scheduler_poll_sleep_us = 1000;

  template <class V>
  void visit(V&& v) {
    v("batch_window_ms", batch_window_ms, range{20, 50}, "batcher gathering window (ms)");
    v("token_budget", token_budget, range{16, 1 << 20}, "most subsampled frames in one micro-batch");
    v("max_chunks_per_step", max_chunks_per_step, range{1, 256},
      "most attention chunks one stream gives to one step");
    v("preallocate", preallocate, any_bool{},
      "size and write the scratch memory of the largest micro-batch at start (flat resident memory under load)");
    v("overlap", overlap, any_bool{}, "split micro-batches in two halves whose dense and expert work overlap");
    v("lanes", lanes, range{-1, 1024},
      "lanes running dense layers and all experts locally (-1: the placement plan's count; 0: batcher + expert actors)");
    v("lane_backend", lane_backend,
      enum_of<config::lane_backend>{{config::lane_backend::cpu, config::lane_backend::device_cpu, config::lane_backend::cuda}},
      "what lanes run model steps on: cpu, device_cpu (the device forward on the CPU) or cuda");
    v("pin_lanes", pin_lanes, any_bool{}, "pin each lane's thread to its own core when there is one lane per allowed core");
    v("placement_probe_ms", placement_probe_ms, range{0, 1000},
      "start-up CPU benchmark choosing the placement plan when lanes = -1 (ms; 0: skip, a lane per core)");
    v("placement_cache_hours", placement_cache_hours, range{0, 8760},
      "hours a start-up probe's result is reused on this machine (~/.cache/sluice; 0: probe at every start)");
    v("live_priority", live_priority, any_bool{},
      "micro-batches take live streams before offline ones (files, uploads)");
    v("lane_decoding", lane_decoding, any_bool{},
      "offline utterances (files, uploads) are decoded on the lane that ran them, not on their channel's thread (lanes > 0)");
    v("offline_gather", offline_gather, any_bool{}, "offline work waits for the window even on a lane with no live stream");
    v("offline_nice", offline_nice, range{0, 19},
      "nice value of the threads of offline channels (files, uploads); 0: the shared scheduler");
    v("expert_shards", expert_shards, range{1, 256}, "expert actors (contiguous runs of experts)");
    v("dedicated_expert_threads", dedicated_expert_threads, any_bool{},
      "each expert actor on its own thread instead of the shared scheduler");
    v("spillways", spillways, range{0, 64}, "spillway actors (replicas of the hottest experts)");
    v("capacity_factor", capacity_factor, range{1.0, 64.0}, "shard capacity: this times its fair share of pairs");
    v("overflow", overflow, enum_of<overflow_policy>{{overflow_policy::keep, overflow_policy::reroute}},
      "over-capacity pairs without a replica: keep (exact) or reroute (next-best expert)");
    v("hot_replicas", hot_replicas, range{0, 4096}, "experts per layer replicated on the spillways");
    v("rebalance_ms", rebalance_ms, range{50, 600000}, "how often the hot experts are re-chosen (ms)");
    v("fp8_dispatch", fp8_dispatch, any_bool{}, "token blocks as FP8 E4M3 with a scale per 128 values");
    v("expert_timeout_ms", expert_timeout_ms, range{10, 600000}, "expert reply timeout before failing over (ms)");
    v("max_channels", max_channels, range{1, 1000000}, "channels admitted at once");
    v("offline_channels", offline_channels, range{0, 1000000},
      "channels sluice transcribe keeps open at once, whole files (0: four per lane)");
    v("max_queue_wait_ms", max_queue_wait_ms, range{10, 600000},
      "refuse new channels while ready audio waits longer than this (ms)");
    v("report_ms", report_ms, range{10, 600000}, "metrics report interval (ms)");
    v("scheduler_threads", scheduler_threads, range{0, 1024}, "CAF scheduler threads (0: one per core)");
    v("scheduler_poll_sleep_us", scheduler_poll_sleep_us, range{0, 100000},
      "idle CAF scheduler threads: sleep between moderate polls for work (us; CAF's default 50)");
  }
  std::string check() const { return {}; }
};

}  // namespace sluice::config
