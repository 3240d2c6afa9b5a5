// The batcher's expert dispatch: each layer's token blocks to the expert actors (or the
// lane's local experts), failover to a spillway, the replies combined, the block buffers sized
// and reused, and the hot-expert choice for the spillways.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <spdlog/spdlog.h>

#include "actors/batcher_state.hpp"
#include "moe/block_codec.hpp"

namespace sluice::actors::batcher_detail {

std::size_t capacity_of(const block_msg& m) {
  return m.block->rows.capacity() + m.block->pair_row.capacity() + m.block->pair_expert.capacity() +
         m.block->pair_weight.capacity() + m.fp8->q.capacity() + m.fp8->scales.capacity() + m.reply->out.capacity();
}

block_msg fresh_block() {
  return block_msg{block_encoding::f32, std::make_shared<moe::token_block>(), std::make_shared<fp8_rows>(),
                   std::make_shared<moe::expert_output>()};
}

// A copy of m in new buffers, for a failover: the first receiver may still hold the old ones.
block_msg copy_block(const block_msg& m) {
  block_msg c = fresh_block();
  c.encoding = m.encoding;
  const auto& b = *m.block;
  *c.block = moe::token_block{b.micro_batch, b.step, b.layer, b.shard, b.d, {}, b.pair_row, b.pair_expert,
                              b.pair_weight};
  if (m.encoding == block_encoding::f32) c.block->rows = b.rows;
  else *c.fp8 = *m.fp8;
  return c;
}

void on_reply(self_ptr self, const state_ptr& st, int hi, int64_t step, int32_t b, reply_msg& r) {
  auto& h = st->halves[hi];
  if (!h.busy || h.mb->step() != step || !r.out) {
    st->meter.count("late_replies");
    return;
  }
  if (auto ok = h.mb->combine(*r.out); !ok) {
    // A second reply for a block that failed over late, or a reply of an earlier layer.
    st->meter.count("late_replies");
    return;
  }
  st->meter.count("bytes_received", static_cast<double>(r.wire_bytes()));
  (void)b;
  if (!h.mb->layer_complete()) return;
  if (auto ok = h.mb->end_layer(); !ok) {
    abort_half(self, st, hi, ok.error().message);
    return;
  }
  advance(self, st, hi);
}

void send_block(self_ptr self, const state_ptr& st, int hi, int32_t b, const block_sink_actor& dest, const block_msg& m);

void on_block_error(self_ptr self, const state_ptr& st, int hi, int64_t step, int32_t b, const caf::error& err) {
  auto& h = st->halves[hi];
  if (!h.busy || h.mb->step() != step) return;
  const std::string why = "expert block " + std::to_string(b) + " failed: " + self->system().render(err);
  if (h.failed_over[b] || st->spillways.empty()) {
    abort_half(self, st, hi, why);
    maybe_start(self, st, false);
    return;
  }
  spdlog::warn("batcher: {}; failing over to a spillway", why);
  st->meter.count("failovers");
  h.failed_over[b] = 1;
  // The old buffers may still be read by the first receiver: the slot gets new ones.
  h.slots[b] = copy_block(h.slots[b]);
  const block_sink_actor dest = st->spillways[static_cast<std::size_t>(b) % st->spillways.size()];
  send_block(self, st, hi, b, dest, h.slots[b]);
}

void send_block(self_ptr self, const state_ptr& st, int hi, int32_t b, const block_sink_actor& dest, const block_msg& m) {
  const int64_t step = st->halves[hi].mb->step();
  st->meter.count("bytes_sent", static_cast<double>(m.wire_bytes()));
  self->request(dest, std::chrono::milliseconds(st->res->cfg.engine.expert_timeout_ms), block_atom::value, m)
      .then([self, st, hi, step, b](reply_msg& r) { on_reply(self, st, hi, step, b, r); },
            [self, st, hi, step, b](caf::error& err) { on_block_error(self, st, hi, step, b, err); });
}

double max_over_mean(const std::vector<int64_t>& load, std::size_t n) {
  int64_t sum = 0, mx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sum += load[i];
    mx = std::max(mx, load[i]);
  }
  return sum > 0 ? static_cast<double>(mx) * static_cast<double>(n) / static_cast<double>(sum) : 1.0;
}

// Routes, dispatches and sends the current layer's blocks; or, at the end, finishes.
void advance(self_ptr self, const state_ptr& st, int hi) {
  auto& h = st->halves[hi];
  auto& mb = *h.mb;
  const auto& cfg = st->res->cfg.engine;
  const auto& arch = st->res->model->arch();
  const auto& placement = st->res->placement;
  if (mb.current_phase() == moe::micro_batch::phase::output) {
    finish_half(self, st, hi);
    return;
  }
  if (st->local) {
    const int64_t n_routed = arch.n_routed;
    int64_t pairs = 0;
    const auto count_pairs = [&](int layer) {
      const auto& r = mb.route();
      const int64_t n = r.n * r.top_k;
      for (int64_t i = 0; i < n; ++i) ++st->lane_pairs[static_cast<std::size_t>(layer * n_routed + r.experts[i])];
      pairs += n;
    };
    auto ok = st->local->run(mb, count_pairs);
    st->meter.count("pairs", static_cast<double>(pairs));
    if (!ok) {
      abort_half(self, st, hi, ok.error().message);
      continue_later(self, st);
      return;
    }
    finish_half(self, st, hi);
    return;
  }
  if (auto ok = mb.run_dense(); !ok) {
    abort_half(self, st, hi, ok.error().message);
    return;
  }
  const int32_t shards = placement.n_shards();
  const int64_t pairs = mb.n_tokens() * arch.top_k;
  const auto capacity = static_cast<int64_t>(std::ceil(cfg.capacity_factor * static_cast<double>(pairs) / shards));
  // Without spillways nothing is replicated: over-capacity pairs reroute or stay.
  auto stats = mb.dispatch(placement, capacity, cfg.overflow, st->spillways.empty() ? nullptr : st->hot.data());
  if (!stats) {
    abort_half(self, st, hi, stats.error().message);
    return;
  }
  // Load before (each pair on its expert's shard) and after the capacity limit.
  const auto& route = mb.route();
  const int layer = mb.layer();
  std::fill(st->shard_before.begin(), st->shard_before.end(), 0);
  for (int64_t p = 0; p < pairs; ++p) {
    const int32_t e = route.experts[static_cast<std::size_t>(p)];
    ++st->shard_before[static_cast<std::size_t>(placement.shard_of(layer, e))];
    st->window_load[static_cast<std::size_t>(layer * arch.n_routed + e)] += 1;
  }
  const auto& plan = mb.plan();
  int64_t placed = 0;
  for (int32_t b = 0; b <= shards; ++b) placed += plan.load[static_cast<std::size_t>(b)];
  st->meter.count("pairs", static_cast<double>(pairs));
  st->meter.count("spilled", static_cast<double>(stats->spilled));
  st->meter.count("rerouted", static_cast<double>(stats->rerouted));
  st->meter.count("kept_over_capacity", static_cast<double>(stats->kept));
  st->meter.count("dropped", static_cast<double>(pairs - placed));  // every pair is in a block: 0
  st->meter.count("dispatches");
  // Load over the same devices (the shards, then the spillways) before and after the
  // capacity limit: before, every pair on its expert's shard; after, where it was sent (a
  // layer's overflow block goes to one spillway).
  const std::size_t n_spill = st->spillways.size(), devices = static_cast<std::size_t>(shards) + n_spill;
  std::vector<int64_t>& after = st->shard_after;
  std::fill_n(st->shard_before.begin() + shards, n_spill, 0);
  std::copy_n(plan.load.begin(), shards, after.begin());
  std::fill_n(after.begin() + shards, n_spill, 0);
  if (n_spill > 0)
    after[static_cast<std::size_t>(shards) + static_cast<std::size_t>(layer) % n_spill] =
        plan.load[static_cast<std::size_t>(shards)];
  st->meter.count("imbalance_before_sum", max_over_mean(st->shard_before, devices));
  st->meter.count("imbalance_after_sum", max_over_mean(after, devices));

  for (int32_t b = 0; b < mb.n_blocks(); ++b) {
    if (!mb.has_block(b)) continue;
    auto& m = h.slots[static_cast<std::size_t>(b)];
    const auto cap0 = capacity_of(m);
    if (auto ok = mb.fill_block(b, *m.block); !ok) {
      abort_half(self, st, hi, ok.error().message);
      return;
    }
    m.encoding = block_encoding::f32;
    if (cfg.fp8_dispatch) {
      moe::encode_fp8(m.block->rows, m.block->d, m.fp8->q, m.fp8->scales);
      m.block->rows.clear();
      m.encoding = block_encoding::fp8_e4m3;
    }
    if (capacity_of(m) > cap0) ++st->pool_growths;
    st->meter.count("rows_sent", static_cast<double>(m.encoding == block_encoding::f32 ? m.block->n_rows()
                                                                                       : m.fp8->q.size() / m.block->d));
    const bool overflow = b == shards;
    // A shard whose expert failed earlier in this step goes on to the spillway that stood in for
    // it (on_block_error): until the supervisor's replacement arrives the old actor is dead, and
    // a second failure of the block would give the whole step up.
    const block_sink_actor dest =
        overflow                                     ? block_sink_actor{st->spillways[static_cast<std::size_t>(layer) % n_spill]}
        : h.failed_over[static_cast<std::size_t>(b)] ? block_sink_actor{st->spillways[static_cast<std::size_t>(b) % n_spill]}
                                                     : st->experts[static_cast<std::size_t>(b)];
    send_block(self, st, hi, b, dest, m);
  }
}

// Half h's block buffers (a lane sends no token block: none), each holding the largest block a
// step of n tokens can make (all its tokens on one shard): what a block gets then depends on
// the step's size, never on where its tokens were routed, so repeated steps allocate nothing.
// `write`: each buffer is also written once, so its pages are resident ([engine] preallocate);
// slots replaced after a failover or an abort are written when the next step sizes them.
void size_slots(const state_ptr& st, half& h, int64_t n_tokens, bool write) {
  const auto n_blocks = st->local ? std::size_t{0} : static_cast<std::size_t>(st->res->placement.n_shards() + 1);
  if (h.slots.size() != n_blocks) {
    h.slots.clear();
    for (std::size_t b = 0; b < n_blocks; ++b) h.slots.push_back(fresh_block());
  }
  const auto& arch = st->res->model->arch();
  const auto n = static_cast<std::size_t>(n_tokens);
  const auto values = n * static_cast<std::size_t>(arch.d_model), pairs = n * static_cast<std::size_t>(arch.top_k);
  auto grow = [write](auto& v, std::size_t k) {
    if (write && v.capacity() < k) {
      v.resize(k);  // written once (a new or a replaced buffer): resident
      v.clear();    // the capacity stays
    } else {
      v.reserve(k);
    }
  };
  for (auto& m : h.slots) {
    const auto cap0 = capacity_of(m);
    grow(m.block->rows, values);
    grow(m.block->pair_row, pairs);
    grow(m.block->pair_expert, pairs);
    grow(m.block->pair_weight, pairs);
    grow(m.fp8->q, values);
    grow(m.fp8->scales, n * (static_cast<std::size_t>(arch.d_model) / moe::fp8_group_size() + 1));
    grow(m.reply->out, values);
    if (capacity_of(m) > cap0) ++st->pool_growths;
  }
}

void rebalance(self_ptr self, const state_ptr& st) {
  const auto& arch = st->res->model->arch();
  const int hot_per_layer = std::min<int>(st->res->cfg.engine.hot_replicas, arch.n_routed);
  for (std::size_t i = 0; i < st->load_ema.size(); ++i)
    st->load_ema[i] = load_ema_keep * st->load_ema[i] + (1 - load_ema_keep) * st->window_load[i];
  std::fill(st->window_load.begin(), st->window_load.end(), 0.0);
  std::fill(st->hot.begin(), st->hot.end(), 0);
  std::vector<int32_t> order(static_cast<std::size_t>(arch.n_routed));
  for (int l = 0; l < arch.n_layers; ++l) {
    const double* ema = st->load_ema.data() + static_cast<std::ptrdiff_t>(l) * arch.n_routed;
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return ema[a] > ema[b]; });
    for (int j = 0; j < hot_per_layer; ++j)
      if (ema[order[static_cast<std::size_t>(j)]] > 0)
        st->hot[static_cast<std::size_t>(l * arch.n_routed + order[static_cast<std::size_t>(j)])] = 1;
  }
  for (const auto& s : st->spillways) self->send(s, hot_atom::value, st->hot);
  st->meter.count("rebalances");
}

}  // namespace sluice::actors::batcher_detail
