#pragma once
// The batcher's and lanes' state and the functions shared by its two source files
// (batcher_actor.cpp: streams, steps and the actor; batcher_dispatch.cpp: token blocks to the
// expert actors and spillways). Internal to actors/: nothing outside includes it.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/actor_meter.hpp"
#include "actors/actor_types.hpp"
#include "actors/batcher_actor.hpp"
#include "kernels/backend.hpp"
#include "moe/decoder/ctc_decoder.hpp"
#include "moe/device/device_model.hpp"
#include "moe/local_experts.hpp"
#include "moe/micro_batch.hpp"
#include "moe/stream_state.hpp"

namespace sluice::actors::batcher_detail {

using clock = std::chrono::steady_clock;
using stream_key = std::pair<channel_id, int64_t>;  // (channel, utterance)

constexpr int n_halves = 2;
constexpr double load_ema_keep = 0.7;  // weight of the old average at each rebalance

inline double ms_since(clock::time_point t, clock::time_point now) {
  return std::chrono::duration<double, std::milli>(now - t).count();
}

struct stream_entry {
  channel_actor_type channel;
  // The stream's model state: its own (CPU lanes, the batcher) or a device stream's host part
  // (device lanes), which then owns the stream's caches on the device.
  moe::stream_state* state = nullptr;
  std::unique_ptr<moe::stream_state> own_state;
  std::unique_ptr<moe::device_stream> device_state;
  bool in_step = false;
  bool dropped = false;
  bool waiting = false;  // has ready frames not yet in a step
  bool offline = false;  // a file or upload segment: yields to live streams (live_priority)
  clock::time_point ready_since{};
  // Features that arrived while the stream was lent to a step (a stream_state takes no input
  // then): handed over when the step ends.
  std::vector<float> pending;
  bool pending_last = false;
  // Lane decoding: the utterance's decoder, handed over by its channel (feature_chunk::decoder),
  // and whether the channel wants a partial after every step.
  std::shared_ptr<moe::ctc_decoder> decoder;
  bool partials = false;
};

struct half {
  std::unique_ptr<moe::micro_batch> mb;
  std::vector<moe::stream_chunk> device_out;  // a device lane's step: each stream's logits
  std::vector<stream_key> keys;
  std::vector<moe::stream_state*> streams;
  std::vector<block_msg> slots;        // [n_blocks]: reused buffers
  std::vector<uint8_t> failed_over;    // [n_blocks]
  bool busy = false;
  clock::time_point started{};
};

struct batcher {
  std::shared_ptr<const engine_resources> res;
  metrics_actor_type metrics;
  supervisor_actor_type supervisor;
  std::vector<block_sink_actor> experts;  // by shard
  std::vector<spillway_actor_type> spillways;
  // Lane mode: every routed expert runs here, right after the dense part (no expert actors).
  std::optional<moe::local_experts> local;
  // Device lanes ([engine] lane_backend): the model resident on a device, stepped whole.
  std::unique_ptr<kernels::backend> device;
  std::unique_ptr<moe::device_model> device_model;
  // Lane mode: pairs run per (layer, expert) since the last report, i64 [n_layers, n_routed]
  // (reported as "pairs/<layer>/<expert>" counters, as expert actors do: the load heatmap).
  std::vector<int64_t> lane_pairs;
  std::map<stream_key, stream_entry> streams;
  std::set<caf::actor_addr> monitored;  // channels with a monitor on them: one each, however many utterances
  // Utterances reported lost (and their channels): chunks of theirs still on the way are ignored
  // rather than starting a stream nobody will finish. Forgotten at their last chunk, or when
  // their channel is dropped or goes down.
  std::map<stream_key, caf::actor_addr> lost;
  half halves[n_halves];
  bool flush_pending = false;
  int64_t step_counter = 0;
  // Load of each (layer, expert) since the last rebalance, its moving average, and the
  // replicated (hot) set the spillways hold.
  std::vector<double> window_load, load_ema;
  std::vector<uint8_t> hot;
  clock::time_point last_rebalance = clock::now();
  actor_meter meter{"batcher", "batcher"};
  int64_t pool_growths = 0;
  std::vector<int64_t> shard_before, shard_after;  // scratch [n_shards + 1]
};

using self_ptr = compute_actor_type::pointer;
using state_ptr = std::shared_ptr<batcher>;

// batcher_actor.cpp
void abort_half(self_ptr self, const state_ptr& st, int hi, const std::string& why);
void finish_half(self_ptr self, const state_ptr& st, int hi);
void continue_later(self_ptr self, const state_ptr& st);
void maybe_start(self_ptr self, const state_ptr& st, bool window_elapsed);

// batcher_dispatch.cpp
block_msg fresh_block();
/// Routes, dispatches and sends the current layer's blocks (or, in a lane, runs the local
/// experts); at the end, finishes the half.
void advance(self_ptr self, const state_ptr& st, int hi);
/// Sizes half h's token-block buffers for a step of n_tokens (see the definition).
void size_slots(const state_ptr& st, half& h, int64_t n_tokens, bool write);
/// Re-chooses the hot experts the spillways replicate, from the moving average of the load.
void rebalance(self_ptr self, const state_ptr& st);

}  // namespace sluice::actors::batcher_detail
