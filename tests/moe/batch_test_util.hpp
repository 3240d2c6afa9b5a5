#pragma once
// A miniature engine for the batch tests: streams fed piece by piece, stepped together by
// micro-batches whose token blocks go to expert shards, the way the actors will do it.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "moe/acoustic_stream.hpp"
#include "moe/expert_shard.hpp"
#include "moe/micro_batch.hpp"
#include "moe/safetensors.hpp"

namespace sluice::test {

inline std::shared_ptr<const moe::acoustic_model> load(const std::string& dir) {
  auto m = moe::load_model(dir);
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return *m;
}

inline std::shared_ptr<const moe::acoustic_model> tiny_model() { return load(SLUICE_TEST_DATA_DIR "/tiny_model"); }

inline std::vector<float> golden_fbank(const char* name, const std::string& dir = SLUICE_TEST_DATA_DIR "/tiny_model") {
  auto f = moe::safetensors_file::load(dir + "/golden/" + name + ".safetensors");
  REQUIRE(f.has_value());
  return *f->read_f32("fbank");
}

// Five utterances of different lengths made from a model directory's golden inputs: slices
// starting 10 frames apart, each 20 frames shorter and 0.25 louder than the one before.
inline std::vector<std::vector<float>> five_fbanks(int64_t mels,
                                                   const std::string& dir = SLUICE_TEST_DATA_DIR "/tiny_model") {
  constexpr int64_t shift = 10, shorter = 20, min_frames = 60;
  constexpr float louder = 0.25f;
  std::vector<std::vector<float>> found, out;
  // Every golden input of the directory, in name order (synthetic0.. for the tiny model).
  std::vector<std::string> names;
  for (const auto& f : std::filesystem::directory_iterator(dir + "/golden"))
    if (f.path().extension() == ".safetensors") names.push_back(f.path().stem().string());
  std::sort(names.begin(), names.end());
  for (const auto& name : names) found.push_back(golden_fbank(name.c_str(), dir));
  REQUIRE_FALSE(found.empty());
  for (int64_t i = 0; i < 5; ++i) {
    const auto& base = found[i % found.size()];
    const int64_t frames = static_cast<int64_t>(base.size()) / mels;
    const int64_t first = std::min(shift * i, frames - 1);
    const int64_t n = std::min(frames - first, std::max(min_frames, frames - shorter * i));
    std::vector<float> fb(base.begin() + first * mels, base.begin() + (first + n) * mels);
    for (auto& v : fb) v += louder * static_cast<float>(i);
    out.push_back(std::move(fb));
  }
  return out;
}

// The expert side: one executor per shard of a placement, plus a replica of every expert for
// the overflow block, each with its own workspace (as each will be its own actor).
struct shard_set {
  moe::expert_placement placement;
  std::vector<moe::expert_shard> shards;
  moe::expert_shard spillway;
  std::vector<moe::workspace> ws;  // [n_shards + 1]
  int64_t capacity = moe::unlimited_capacity;
  moe::overflow_policy policy = moe::overflow_policy::spill;
  // Message buffers reused from step to step, as the actors will reuse theirs.
  moe::token_block block;
  std::vector<moe::expert_output> replies;  // [n_shards + 1]

  shard_set(const moe::acoustic_model& model, moe::expert_placement p)
      : placement(std::move(p)),
        spillway(moe::expert_shard::all_experts(model)),
        ws(placement.n_shards() + 1),
        replies(placement.n_shards() + 1) {
    for (int32_t s = 0; s < placement.n_shards(); ++s) {
      auto e = moe::expert_shard::create(model, placement, s);
      REQUIRE(e.has_value());
      shards.push_back(std::move(*e));
    }
  }

  // Runs block b of mb on its shard; the reply is replies[b].
  const moe::expert_output& run(moe::micro_batch& mb, int32_t b) {
    REQUIRE(mb.fill_block(b, block).has_value());
    CHECK(block.layer == mb.layer());
    CHECK(block.shard == b);
    const moe::expert_shard& ex = b < placement.n_shards() ? shards[b] : spillway;
    auto ok = ex.run(block, replies[b], ws[b]);
    REQUIRE_MESSAGE(ok.has_value(), ok.error().message);
    return replies[b];
  }

  int64_t growths() const {
    int64_t n = 0;
    for (const auto& w : ws) n += w.growths;
    return n;
  }
};

// Optional checks around each layer of a step.
struct layer_hooks {
  std::function<void(const moe::micro_batch&)> after_dispatch;
  std::function<void(const moe::micro_batch&)> after_end;
};

// Runs one layer of mb: dense, dispatch, every block through its shard, combine, end.
inline void run_layer(moe::micro_batch& mb, shard_set& ex, const layer_hooks& hooks = {}) {
  REQUIRE(mb.run_dense().has_value());
  auto stats = mb.dispatch(ex.placement, ex.capacity, ex.policy);
  REQUIRE_MESSAGE(stats.has_value(), stats.error().message);
  if (hooks.after_dispatch) hooks.after_dispatch(mb);
  for (int32_t b = 0; b < mb.n_blocks(); ++b)
    if (mb.has_block(b)) ex.run(mb, b);
  // Replies are combined in reverse block order: arrival order must not matter.
  for (int32_t b = mb.n_blocks() - 1; b >= 0; --b) {
    if (!mb.has_block(b)) continue;
    CHECK_FALSE(mb.layer_complete());
    auto ok = mb.combine(ex.replies[b]);
    REQUIRE_MESSAGE(ok.has_value(), ok.error().message);
  }
  CHECK(mb.layer_complete());
  REQUIRE(mb.end_layer().has_value());
  if (hooks.after_end) hooks.after_end(mb);
}

inline void run_all_layers(moe::micro_batch& mb, shard_set& ex, const layer_hooks& hooks = {}) {
  while (mb.current_phase() == moe::micro_batch::phase::dense) run_layer(mb, ex, hooks);
  REQUIRE(mb.finish().has_value());
}

// One stream of the simulated engine: input arrives in random pieces from step `start` on.
struct fed_stream {
  std::vector<float> fbank;
  int64_t start = 0;
  int64_t at = 0;  // input frames given so far
  std::mt19937 rng;
  moe::stream_state state;
  std::vector<float> logits;  // concatenated output

  // Gives the next piece of input at `step` (1..40 frames); finishes when all is given.
  void feed(int64_t step, int64_t mels) {
    const int64_t frames = static_cast<int64_t>(fbank.size()) / mels;
    if (step < start || state.finished()) return;
    const int64_t n = std::min<int64_t>(frames - at, std::uniform_int_distribution<int64_t>(1, 40)(rng));
    REQUIRE(state.accept_fbank(fbank.data() + at * mels, n).has_value());
    at += n;
    if (at == frames) REQUIRE(state.finish().has_value());
  }
  bool active(int64_t step) const { return step >= start && !state.done(); }

  void take(const moe::stream_logits& l) {
    CHECK(l.first_frame * l.vocab == static_cast<int64_t>(logits.size()));
    logits.insert(logits.end(), l.logits.begin(), l.logits.end());
  }
};

inline std::vector<fed_stream> make_streams(const moe::acoustic_model& model,
                                            const std::vector<std::vector<float>>& fbanks) {
  std::vector<fed_stream> out;
  const auto& s = model.manifest().streaming;
  for (std::size_t i = 0; i < fbanks.size(); ++i) {
    auto st = moe::stream_state::create(model, moe::attention_window{s.chunk_frames, s.left_chunks});
    REQUIRE(st.has_value());
    out.push_back({fbanks[i], static_cast<int64_t>(2 * i), 0, std::mt19937(static_cast<unsigned>(17 + i)),
                   std::move(*st), {}});
  }
  return out;
}

// Steps of at most one chunk per stream until every stream is done. `step_fn` runs one step
// over the active streams (it begins, runs and finishes micro-batches and hands each stream
// its logits). Returns the number of steps.
inline int64_t run_engine(std::vector<fed_stream>& streams, int64_t mels,
                          const std::function<void(std::vector<fed_stream*>&)>& step_fn) {
  constexpr int64_t max_steps = 10000;
  int64_t step = 0;
  for (; step < max_steps; ++step) {
    std::vector<fed_stream*> active;
    for (auto& s : streams) {
      s.feed(step, mels);
      if (s.active(step)) active.push_back(&s);
    }
    if (active.empty() && std::all_of(streams.begin(), streams.end(), [](auto& s) { return s.state.done(); })) break;
    step_fn(active);
  }
  REQUIRE(step < max_steps);
  return step;
}

// One micro-batch over `active`, its experts on `ex`.
inline void step_one_batch(moe::micro_batch& mb, shard_set& ex, std::vector<fed_stream*>& active,
                           const layer_hooks& hooks = {}) {
  std::vector<moe::stream_state*> states;
  for (auto* s : active) states.push_back(&s->state);
  REQUIRE(mb.begin(states).has_value());
  run_all_layers(mb, ex, hooks);
  for (std::size_t i = 0; i < active.size(); ++i) active[i]->take(mb.logits(i));
}

}  // namespace sluice::test
