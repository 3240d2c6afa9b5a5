// The batched step: many streams, fed piece by piece and starting at different times, stepped
// together one chunk at a time with their routed experts on 1, 2 or 4 shards, give each
// stream the logits it gets on its own; two micro-batches interleaved give the same; repeated
// steps of the same shapes stop allocating.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "moe/acoustic_stream.hpp"
#include "moe/forward.hpp"
#include "moe/micro_batch.hpp"
#include "moe/routed_experts.hpp"
#include "tests/moe/batch_test_util.hpp"
#include "tests/moe/model_test_util.hpp"

using namespace sluice;
using namespace sluice::moe;
using test::fed_stream;
using test::shard_set;

namespace {

// Batched and alone run the same f32 math; only the order of the sums differs (GEMM blocking by
// batch size, expert groups). As in dtype_parity_test: each of the longest path's stages (5 in
// the front end, 7 per block, 2 at the head) may round its result differently by a relative
// u = 2^-24, and LayerNorm keeps the gain near 1, so to first order |d logits| <= n_stages * u *
// max |logits| (about 3.5e-5 for the default model's max |logits| near 12).
double batch_tolerance(int n_layers, const std::vector<float>& logits) {
  double scale = 0;
  for (float v : logits) scale = std::max(scale, double(std::abs(v)));
  return (5.0 + 7.0 * n_layers + 2.0) * std::ldexp(1.0, -24) * scale;
}

// Each utterance alone: an acoustic_stream given everything at once, and the offline forward.
struct reference {
  std::vector<std::vector<float>> stream, offline;
};

reference references(const std::shared_ptr<const acoustic_model>& model,
                     const std::vector<std::vector<float>>& fbanks) {
  reference r;
  const int64_t mels = model->arch().n_mels;
  const auto& s = model->manifest().streaming;
  forward_options fo;
  fo.window = attention_window{s.chunk_frames, s.left_chunks};
  for (const auto& fb : fbanks) {
    const int64_t frames = static_cast<int64_t>(fb.size()) / mels;
    auto st = acoustic_stream::create(model);
    REQUIRE(st.has_value());
    auto a = st->accept_fbank(fb.data(), frames);
    auto b = st->finish();
    REQUIRE((a.has_value() && b.has_value()));
    std::vector<float> l = a->logits;
    l.insert(l.end(), b->logits.begin(), b->logits.end());
    r.stream.push_back(std::move(l));
    auto off = forward_offline(*model, fb.data(), frames, fo);
    REQUIRE(off.has_value());
    r.offline.push_back(std::move(off->logits));
  }
  return r;
}

// The worst difference of the streams' logits from the references (checking each).
double compare(const std::vector<fed_stream>& streams, const reference& ref, int n_layers) {
  double worst = 0;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    CAPTURE(i);
    REQUIRE(streams[i].logits.size() == ref.offline[i].size());
    for (const auto* r : {&ref.stream[i], &ref.offline[i]}) {
      const double err = test::max_abs_diff(*r, streams[i].logits);
      CHECK(err <= batch_tolerance(n_layers, *r));
      worst = std::max(worst, err);
    }
  }
  return worst;
}

struct named_placement {
  std::string name;
  expert_placement placement;
};

std::vector<named_placement> placements(const architecture& a) {
  std::vector<named_placement> out;
  for (int32_t n : {1, 2, 4})
    out.push_back({std::to_string(n) + " contiguous shards", *expert_placement::contiguous(a, n)});
  std::vector<std::vector<int32_t>> even_odd(2);
  for (int32_t e = 0; e < a.n_routed; ++e) even_odd[e % 2].push_back(e);
  out.push_back({"2 shards, even and odd ids", *expert_placement::same_in_every_layer(a, even_odd)});
  std::vector<std::vector<std::vector<int32_t>>> per_layer(a.n_layers);
  for (int l = 0; l < a.n_layers; ++l) {
    per_layer[l].resize(4);
    for (int32_t e = 0; e < a.n_routed; ++e) per_layer[l][(e + l) % 4].push_back(e);
  }
  out.push_back({"4 shards, a different split per layer", *expert_placement::per_layer(a, per_layer)});
  return out;
}

void check_batched(const std::string& dir) {
  auto model = test::load(dir);
  const auto& arch = model->arch();
  const auto fbanks = test::five_fbanks(arch.n_mels, dir);
  const reference ref = references(model, fbanks);
  for (const auto& [name, placement] : placements(arch)) {
    CAPTURE(name);
    auto streams = test::make_streams(*model, fbanks);
    shard_set ex(*model, placement);
    micro_batch mb(*model, 7);
    int64_t max_streams = 0;
    const int64_t steps = test::run_engine(streams, arch.n_mels, [&](std::vector<fed_stream*>& active) {
      max_streams = std::max<int64_t>(max_streams, static_cast<int64_t>(active.size()));
      test::step_one_batch(mb, ex, active);
    });
    CHECK(max_streams == 5);
    CHECK(mb.step_stats().over_capacity == 0);
    MESSAGE(dir.substr(dir.rfind('/') + 1) << ", " << name << ": " << steps
                                           << " steps, max abs diff from each stream alone " << compare(streams, ref, arch.n_layers));
  }
}

}  // namespace

TEST_SUITE("batch") {
  TEST_CASE("5 streams stepped together on 1, 2 and 4 expert shards equal each stream alone") {
    check_batched(SLUICE_TEST_DATA_DIR "/tiny_model");
  }

  TEST_CASE("an extra model directory (SLUICE_MOE_GOLDEN_DIR) batches like its streams too") {
    // The shipped default model, or another model directory with golden vectors.
    const char* env = std::getenv("SLUICE_MOE_GOLDEN_DIR");
    const std::string dir = env ? env : SLUICE_SOURCE_DIR "/models/default";
    check_batched(dir);
  }

  TEST_CASE("two micro-batches interleaved phase by phase give the same logits") {
    auto model = test::tiny_model();
    const auto& arch = model->arch();
    const auto fbanks = test::five_fbanks(arch.n_mels);
    const reference ref = references(model, fbanks);
    auto streams = test::make_streams(*model, fbanks);
    shard_set ex(*model, *expert_placement::contiguous(arch, 2));
    micro_batch a(*model, 1), b(*model, 2);
    test::run_engine(streams, arch.n_mels, [&](std::vector<fed_stream*>& active) {
      // Even streams in a, odd in b: a's dense part runs while b's blocks are out, and back.
      std::vector<stream_state*> sa, sb;
      std::vector<fed_stream*> fa, fb;
      for (std::size_t i = 0; i < active.size(); ++i) {
        (i % 2 ? sb : sa).push_back(&active[i]->state);
        (i % 2 ? fb : fa).push_back(active[i]);
      }
      REQUIRE(a.begin(sa).has_value());
      REQUIRE(b.begin(sb).has_value());
      using ph = micro_batch::phase;
      while (a.current_phase() == ph::dense || b.current_phase() == ph::dense) {
        std::vector<expert_output> out_a, out_b;
        for (auto* mb : {&a, &b}) {
          if (mb->current_phase() != ph::dense) continue;
          REQUIRE(mb->run_dense().has_value());
          REQUIRE(mb->dispatch(ex.placement).has_value());
          auto& out = mb == &a ? out_a : out_b;
          for (int32_t blk = 0; blk < mb->n_blocks(); ++blk)
            if (mb->has_block(blk)) out.push_back(ex.run(*mb, blk));
        }
        // A reply for the other micro-batch is refused and changes nothing.
        if (!out_a.empty() && b.current_phase() == ph::experts) CHECK_FALSE(b.combine(out_a.front()).has_value());
        for (auto* mb : {&b, &a}) {
          if (mb->current_phase() != ph::experts) continue;
          for (const auto& r : mb == &a ? out_a : out_b) REQUIRE(mb->combine(r).has_value());
          REQUIRE(mb->end_layer().has_value());
        }
      }
      REQUIRE(a.finish().has_value());
      REQUIRE(b.finish().has_value());
      for (std::size_t i = 0; i < fa.size(); ++i) fa[i]->take(a.logits(i));
      for (std::size_t i = 0; i < fb.size(); ++i) fb[i]->take(b.logits(i));
    });
    MESSAGE("two interleaved micro-batches: max abs diff from each stream alone " << compare(streams, ref, arch.n_layers));
  }

  TEST_CASE("steady state: repeated steps of the same shapes do not grow any buffer") {
    auto model = test::tiny_model();
    const auto& arch = model->arch();
    const int64_t mels = arch.n_mels, chunk = model->manifest().streaming.chunk_frames;
    const auto fbanks = test::five_fbanks(mels);
    for (int32_t n_shards : {1, 4}) {
      CAPTURE(n_shards);
      auto streams = test::make_streams(*model, fbanks);
      shard_set ex(*model, *expert_placement::contiguous(arch, n_shards));
      micro_batch mb(*model);
      // Every stream gets one chunk of input per step (4 input frames per output frame), so
      // after the first steps each step takes one chunk from each of the 5 streams.
      const int64_t per_step = 4 * chunk, warm_up = 8, steps = 40;
      struct counts {
        std::vector<int64_t> batch, shards;
      };
      auto pass = [&] {
        counts c;
        for (auto& s : streams) {
          s.state.reset();
          s.logits.clear();
        }
        for (int64_t step = 0; step < steps; ++step) {
          std::vector<fed_stream*> all;
          for (auto& s : streams) {
            const int64_t at = (step * per_step) % (static_cast<int64_t>(s.fbank.size()) / mels - per_step);
            REQUIRE(s.state.accept_fbank(s.fbank.data() + at * mels, per_step).has_value());
            all.push_back(&s);
          }
          test::step_one_batch(mb, ex, all);
          if (step >= warm_up) CHECK(mb.n_tokens() == 5 * chunk);
          c.batch.push_back(mb.growths());
          c.shards.push_back(ex.growths());
        }
        return c;
      };
      const counts first = pass();
      CHECK(first.batch.back() > 0);
      // The micro-batch's own buffers have one shape per step once the streams are warm.
      CHECK(first.batch.back() == first.batch[warm_up]);
      // With one shard so do the blocks; with four, block sizes follow the routing, so the
      // shards' buffers grow until the largest block has come by. The same steps again: no
      // buffer anywhere grows.
      if (n_shards == 1) CHECK(first.shards.back() == first.shards[warm_up]);
      const counts again = pass();
      CHECK(again.batch.back() == first.batch.back());
      CHECK(again.shards.back() == first.shards.back());
      MESSAGE(n_shards << " shards: buffer growths of the micro-batch " << first.batch[warm_up] << " in " << warm_up
                       << " warm-up steps, " << first.batch.back() - first.batch[warm_up] << " in the next "
                       << steps - warm_up << ", " << again.batch.back() - first.batch.back()
                       << " in a replay; of the expert shards " << first.shards[warm_up] << ", "
                       << first.shards.back() - first.shards[warm_up] << ", "
                       << again.shards.back() - first.shards.back());
    }
  }

  TEST_CASE("preallocated for the largest step: steps up to it grow no buffer, under every overflow policy") {
    auto model = test::tiny_model();
    const auto& arch = model->arch();
    const auto& sw = model->manifest().streaming;
    const attention_window window{sw.chunk_frames, sw.left_chunks};
    const int64_t mels = arch.n_mels, chunk = sw.chunk_frames, max_chunks = 4, n_streams = 5;
    const int32_t n_shards = 4;
    // Bounds as engine_resources::largest_step makes them (token budget = 5 streams x 4 chunks).
    const step_bounds bounds{n_streams * max_chunks * chunk, max_chunks * chunk, n_shards + 1};
    const int64_t pairs = bounds.tokens * arch.top_k;
    const auto fbanks = test::five_fbanks(mels);
    REQUIRE(fbanks.size() == static_cast<std::size_t>(n_streams));
    for (auto policy : {overflow_policy::spill, overflow_policy::reroute_spill, overflow_policy::keep,
                        overflow_policy::reroute}) {
      CAPTURE(static_cast<int>(policy));
      auto streams = test::make_streams(*model, fbanks);
      shard_set ex(*model, *expert_placement::contiguous(arch, n_shards));
      ex.policy = policy;
      ex.capacity = pairs / n_shards / 4;  // well under a fair share: every step overflows
      micro_batch mb(*model);
      mb.preallocate(bounds, window);
      for (auto& w : ex.ws) preallocate_experts(arch, pairs, w);
      // The message buffers, sized as the batcher sizes its block slots.
      ex.block.rows.reserve(static_cast<std::size_t>(bounds.tokens * arch.d_model));
      for (auto* v : {&ex.block.pair_row, &ex.block.pair_expert}) v->reserve(static_cast<std::size_t>(pairs));
      ex.block.pair_weight.reserve(static_cast<std::size_t>(pairs));
      for (auto& r : ex.replies) r.out.reserve(static_cast<std::size_t>(bounds.tokens * arch.d_model));
      const int64_t mb0 = mb.growths(), ex0 = ex.growths();
      CHECK(mb0 > 0);  // preallocation itself did size the buffers

      // Each stream gets twice max_chunks chunks of input per step (4 input frames per output
      // frame), then its end: a backlog builds, so steps take the most, max_chunks chunks of each.
      int64_t largest = 0, over = 0, steps = 0;
      std::vector<int64_t> at(streams.size(), 0);
      for (; steps < 1000; ++steps) {
        std::vector<stream_state*> states;
        for (std::size_t i = 0; i < streams.size(); ++i) {
          auto& s = streams[i];
          const int64_t frames = static_cast<int64_t>(s.fbank.size()) / mels;
          const int64_t n = std::min(frames - at[i], 2 * 4 * max_chunks * chunk);
          if (n > 0) REQUIRE(s.state.accept_fbank(s.fbank.data() + at[i] * mels, n).has_value());
          at[i] += n;
          if (at[i] == frames && !s.state.finished()) REQUIRE(s.state.finish().has_value());
          if (s.state.ready_frames() > 0) states.push_back(&s.state);
        }
        if (states.empty()) break;
        REQUIRE(mb.begin(states, max_chunks).has_value());
        REQUIRE(mb.n_tokens() <= bounds.tokens);
        largest = std::max(largest, mb.n_tokens());
        test::run_all_layers(mb, ex);
        over += mb.step_stats().over_capacity;
      }
      REQUIRE(steps < 1000);
      CHECK(largest == bounds.tokens);  // the largest step did come by
      CHECK(over > 0);                  // and the overflow paths ran
      CHECK(mb.growths() == mb0);
      CHECK(ex.growths() == ex0);
      MESSAGE("policy " << static_cast<int>(policy) << ": " << steps << " steps, largest " << largest << " tokens, "
                        << over << " pairs over capacity; growths after preallocation: micro-batch "
                        << mb.growths() - mb0 << ", shards " << ex.growths() - ex0);
    }
  }

  TEST_CASE("a stream alone keeps a flat workspace too") {
    auto model = test::tiny_model();
    const int64_t mels = model->arch().n_mels;
    auto s = acoustic_stream::create(model);
    REQUIRE(s.has_value());
    const auto fb = test::golden_fbank("synthetic0");
    const int64_t piece = 16;
    std::vector<int64_t> growths;
    for (int64_t at = 0; at + piece <= static_cast<int64_t>(fb.size()) / mels; at += piece) {
      REQUIRE(s->accept_fbank(fb.data() + at * mels, piece).has_value());
      growths.push_back(s->growths());
    }
    REQUIRE(growths.size() > 10);
    CHECK(growths.back() == growths[4]);
  }
}

TEST_SUITE("batch") {
  TEST_CASE("an aborted step releases and resets its streams, a dropped micro-batch aborts itself") {
    auto model = sluice::test::tiny_model();
    auto fb = sluice::test::golden_fbank("synthetic0");
    const int64_t mels = model->arch().n_mels;
    auto st = stream_state::create(*model, {model->arch().chunk_frames, model->arch().left_chunks});
    REQUIRE(st.has_value());
    REQUIRE(st->accept_fbank(fb.data(), static_cast<int64_t>(fb.size()) / mels).has_value());
    stream_state* lent[] = {&*st};
    {
      micro_batch mb(*model);
      REQUIRE(mb.begin(lent).has_value());
      REQUIRE(mb.run_dense().has_value());
      CHECK(st->in_step());
      CHECK_FALSE(st->accept_fbank(fb.data(), 1).has_value());  // lent streams refuse input
      mb.abort();
      CHECK_FALSE(st->in_step());
      CHECK(st->position() == 0);  // reset: the half-done step left no trace in its caches
      CHECK(st->ready_frames() == 0);  // and dropped the frames buffered before it
    }
    REQUIRE(st->accept_fbank(fb.data(), static_cast<int64_t>(fb.size()) / mels).has_value());
    {
      micro_batch mb(*model);
      REQUIRE(mb.begin(lent).has_value());
    }  // destroyed mid-step
    CHECK_FALSE(st->in_step());
    CHECK(st->accept_fbank(fb.data(), 1).has_value());
  }
}
