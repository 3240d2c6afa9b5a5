#include "moe/micro_batch.hpp"

#include <algorithm>
#include <string>

#include "moe/frontend.hpp"
#include "moe/routed_experts.hpp"

namespace sluice::moe {
namespace {

constexpr float layer_norm_eps = 1e-5f;  // torch.nn.LayerNorm's default

const char* name(micro_batch::phase p) {
  switch (p) {
    case micro_batch::phase::idle: return "idle";
    case micro_batch::phase::dense: return "dense";
    case micro_batch::phase::dispatch: return "dispatch";
    case micro_batch::phase::experts: return "experts";
    case micro_batch::phase::output: return "output";
    case micro_batch::phase::done: return "done";
  }
  return "?";
}

void add(float* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

}  // namespace

micro_batch::micro_batch(const acoustic_model& model, int32_t id, compute_options compute, workspace* ws)
    : model_(&model),
      id_(id),
      ctx_(compute),
      own_ws_(ws ? nullptr : std::make_unique<workspace>()),
      ws_(ws ? ws : own_ws_.get()),
      d_(model.arch().d_model) {}

result<void> micro_batch::expect(phase p, const char* call) const {
  if (phase_ == p) return {};
  return fail(errc::invalid_argument, "micro-batch " + std::to_string(id_) + ": " + call + " in phase " +
                                          name(phase_) + " (it belongs to phase " + name(p) + ")");
}

result<void> micro_batch::begin(std::span<stream_state* const> streams, int64_t max_chunks) {
  if (phase_ != phase::idle && phase_ != phase::done) return expect(phase::done, "begin()");
  // Messages are built on the error path only: a step allocates nothing in steady state.
  auto where = [&] { return "micro-batch " + std::to_string(id_) + ": begin(): "; };
  if (max_chunks < 1) return fail(errc::invalid_argument, where() + "max_chunks must be >= 1");
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const stream_state* s = streams[i];
    const bool repeated = std::find(streams.begin(), streams.begin() + i, s) != streams.begin() + i;
    const char* bad = !s                      ? "is null"
                      : &s->model() != model_ ? "runs another model"
                      : s->in_step()          ? "is already in a step"
                      : repeated              ? "is given twice"
                                              : nullptr;
    if (bad) return fail(errc::invalid_argument, where() + "stream " + std::to_string(i) + " " + bad);
  }
  const auto& arch = model_->arch();
  const int64_t na = arch.n_acoustic;
  const auto n_streams = streams.size();
  ws_->fit(streams_, n_streams);
  ws_->fit(attention_segs_, n_streams);
  ws_->fit(context_segs_, n_streams);
  n_tokens_ = 0;
  for (std::size_t i = 0; i < n_streams; ++i) {
    stream_state& s = *streams[i];
    const int64_t n = s.step_frames(max_chunks);
    // A stream's last step keeps no cache: nothing will read it, and with an empty cache the
    // attention reads keys straight from the projections (the offline forward).
    const bool last = s.finished() && n == s.ready_frames();
    const attention_window w = s.window();
    const int64_t keep = last ? 0 : w.left_chunks >= 0 ? int64_t{w.left_chunks} * w.chunk_frames : -1;
    streams_[i] = &s;
    attention_segs_[i] = attention_segment{n_tokens_, n, s.position(), w, nullptr, keep};
    context_segs_[i] = context_segment{n_tokens_, n, nullptr};
    n_tokens_ += n;
  }
  ws_->fit(x_, n_tokens_ * d_);
  ws_->fit(acoustic_, n_tokens_ * na);
  for (std::size_t i = 0; i < n_streams; ++i) {
    stream_state& s = *streams_[i];
    const auto& seg = attention_segs_[i];
    s.front_.take(ctx_, seg.n, x_.data() + seg.row0 * d_, acoustic_.data() + seg.row0 * na, *ws_);
    s.position_ += seg.n;
    s.in_step_ = true;
  }
  for (auto* v : {&xn_, &delta_, &routed_}) ws_->fit(*v, n_tokens_ * d_);
  make_rope_table(attention_segs_, n_tokens_, arch.head_dim(), arch.rope_base, *ws_);
  ++step_;
  layer_ = 0;
  stats_ = {};
  plan_.n_shards = 0;
  phase_ = n_tokens_ > 0 ? phase::dense : phase::output;
  return {};
}

result<void> micro_batch::run_dense() {
  if (auto ok = expect(phase::dense, "run_dense()"); !ok) return ok;
  const auto& arch = model_->arch();
  const block_weights& b = model_->weights().blocks[layer_];
  const auto& ops = ctx_.ops();
  const int64_t n = n_tokens_;
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    attention_segs_[i].cache = &streams_[i]->layers_[layer_].kv;
    context_segs_[i].cache = &streams_[i]->layers_[layer_].context;
  }
  ops.layer_norm(x_.data(), b.ln1.gamma.data(), b.ln1.beta.data(), xn_.data(), n, d_, layer_norm_eps);
  attention_forward(ctx_, b, arch, attention_segs_, xn_.data(), n, delta_.data(), *ws_);
  add(x_.data(), delta_.data(), n * d_);
  ops.layer_norm(x_.data(), b.ln2.gamma.data(), b.ln2.beta.data(), xn_.data(), n, d_, layer_norm_eps);
  moe_dense_forward(ctx_, b.moe, arch, context_segs_, xn_.data(), acoustic_.data(), n, delta_.data(), *ws_);
  phase_ = phase::dispatch;
  return {};
}

result<dispatch_stats> micro_batch::dispatch(const expert_placement& placement, int64_t capacity,
                                             overflow_policy policy, const uint8_t* replicated) {
  if (auto ok = expect(phase::dispatch, "dispatch()"); !ok) return tl::unexpected(ok.error());
  const auto& arch = model_->arch();
  if (placement.n_layers() != arch.n_layers || placement.n_experts() != arch.n_routed)
    return fail(errc::invalid_argument, "micro-batch " + std::to_string(id_) +
                                            ": dispatch(): the placement is for another architecture");
  if (capacity < 0) return fail(errc::invalid_argument, "micro-batch: dispatch(): negative capacity");
  const routing& r = ws_->route;
  assign_to_shards(r, placement, layer_, capacity, plan_, *ws_);
  if (policy == overflow_policy::reroute_spill && !plan_.overflow.empty())
    reroute_overflow(r, model_->weights().blocks[layer_].moe.expert_bias.data(), placement, layer_, capacity, plan_,
                     *ws_);
  if ((policy == overflow_policy::keep || policy == overflow_policy::reroute) && !plan_.overflow.empty())
    settle_overflow(r, model_->weights().blocks[layer_].moe.expert_bias.data(), placement, layer_, capacity,
                    replicated ? replicated + static_cast<std::ptrdiff_t>(layer_) * arch.n_routed : nullptr, plan_,
                    *ws_, policy == overflow_policy::reroute);
  index_blocks();
  stats_ += plan_.stats;
  std::fill(routed_.begin(), routed_.end(), 0.0f);
  phase_ = phase::experts;
  return plan_.stats;
}

// Counting sorts of the rows (distinct tokens) and the pairs by block, both in token order.
void micro_batch::index_blocks() {
  const int64_t blocks = n_blocks(), k = plan_.top_k, pairs = n_tokens_ * k;
  for (auto* v : {&row_begin_, &pair_begin_}) {
    ws_->fit(*v, blocks + 1);
    std::fill(v->begin(), v->end(), 0);
  }
  // A token's pairs in one block share one row: it is counted at the first of them.
  auto first_in_block = [&](int64_t t, int j) {
    const int32_t* b = plan_.block.data() + t * k;
    return std::find(b, b + j, b[j]) == b + j;
  };
  for (int64_t t = 0; t < n_tokens_; ++t)
    for (int j = 0; j < k; ++j) {
      const int32_t b = plan_.block[t * k + j];
      ++pair_begin_[b + 1];
      if (first_in_block(t, j)) ++row_begin_[b + 1];
    }
  for (int64_t b = 0; b < blocks; ++b) {
    row_begin_[b + 1] += row_begin_[b];
    pair_begin_[b + 1] += pair_begin_[b];
  }
  ws_->fit(row_cursor_, blocks);
  ws_->fit(pair_cursor_, blocks);
  std::copy_n(row_begin_.begin(), blocks, row_cursor_.begin());
  std::copy_n(pair_begin_.begin(), blocks, pair_cursor_.begin());
  ws_->fit(row_token_, row_begin_[blocks]);
  ws_->fit(block_pair_, pairs);
  ws_->fit(pair_row_, pairs);
  for (int64_t t = 0; t < n_tokens_; ++t)
    for (int j = 0; j < k; ++j) {
      const int64_t p = t * k + j;
      const int32_t b = plan_.block[p];
      if (first_in_block(t, j)) {
        pair_row_[p] = static_cast<int32_t>(row_cursor_[b] - row_begin_[b]);
        row_token_[row_cursor_[b]++] = static_cast<int32_t>(t);
      } else {
        const int32_t* blocks_of_t = plan_.block.data() + t * k;
        pair_row_[p] = pair_row_[t * k + (std::find(blocks_of_t, blocks_of_t + j, b) - blocks_of_t)];
      }
      block_pair_[pair_cursor_[b]++] = static_cast<int32_t>(p);
    }
  ws_->fit(replied_, blocks);
  std::fill(replied_.begin(), replied_.end(), 0);
  outstanding_ = 0;
  for (int64_t b = 0; b < blocks; ++b) outstanding_ += pair_begin_[b + 1] > pair_begin_[b];
}

bool micro_batch::has_block(int32_t b) const {
  return phase_ == phase::experts && b >= 0 && b < n_blocks() && pair_begin_[b + 1] > pair_begin_[b];
}

result<void> micro_batch::fill_block(int32_t b, token_block& out) {
  if (auto ok = expect(phase::experts, "fill_block()"); !ok) return ok;
  if (b < 0 || b >= n_blocks())
    return fail(errc::invalid_argument, "micro-batch " + std::to_string(id_) + ": fill_block(): no block " +
                                            std::to_string(b) + " of " + std::to_string(n_blocks()));
  out.micro_batch = id_;
  out.step = step_;
  out.layer = layer_;
  out.shard = b;
  out.d = d_;
  const int64_t r0 = row_begin_[b], rows = row_begin_[b + 1] - r0;
  const int64_t p0 = pair_begin_[b], pairs = pair_begin_[b + 1] - p0;
  ws_->fit(out.rows, rows * d_);
  for (int64_t i = 0; i < rows; ++i) std::copy_n(xn_.data() + row_token_[r0 + i] * d_, d_, out.rows.data() + i * d_);
  ws_->fit(out.pair_row, pairs);
  ws_->fit(out.pair_expert, pairs);
  ws_->fit(out.pair_weight, pairs);
  for (int64_t i = 0; i < pairs; ++i) {
    const int32_t p = block_pair_[p0 + i];
    out.pair_row[i] = pair_row_[p];
    out.pair_expert[i] = plan_.expert[p];
    out.pair_weight[i] = plan_.weight[p];
  }
  return {};
}

result<void> micro_batch::combine(const expert_output& reply) {
  if (auto ok = expect(phase::experts, "combine()"); !ok) return ok;
  auto where = [&] { return "micro-batch " + std::to_string(id_) + ": combine(): "; };
  if (reply.micro_batch != id_ || reply.step != step_ || reply.layer != layer_)
    return fail(errc::invalid_argument, where() + "reply for micro-batch " + std::to_string(reply.micro_batch) +
                                            " step " + std::to_string(reply.step) + " layer " +
                                            std::to_string(reply.layer) + ", expected step " + std::to_string(step_) +
                                            " layer " + std::to_string(layer_));
  const int32_t b = reply.shard;
  if (!has_block(b)) return fail(errc::invalid_argument, where() + "block " + std::to_string(b) + " was not sent");
  if (replied_[b]) return fail(errc::invalid_argument, where() + "second reply for block " + std::to_string(b));
  const int64_t r0 = row_begin_[b], rows = row_begin_[b + 1] - r0;
  if (reply.d != d_ || static_cast<int64_t>(reply.out.size()) != rows * d_)
    return fail(errc::invalid_argument, where() + "block " + std::to_string(b) + " has " + std::to_string(rows) +
                                            " rows of " + std::to_string(d_) + ", the reply " +
                                            std::to_string(reply.out.size()) + " values");
  for (int64_t i = 0; i < rows; ++i) add(routed_.data() + row_token_[r0 + i] * d_, reply.out.data() + i * d_, d_);
  replied_[b] = 1;
  --outstanding_;
  return {};
}

result<void> micro_batch::end_layer() {
  if (auto ok = expect(phase::experts, "end_layer()"); !ok) return ok;
  if (outstanding_ > 0)
    return fail(errc::invalid_argument, "micro-batch " + std::to_string(id_) + ": end_layer(): " +
                                            std::to_string(outstanding_) + " blocks have no reply yet");
  // As model.py: the block's output is x + (shared + routed).
  add(delta_.data(), routed_.data(), n_tokens_ * d_);
  add(x_.data(), delta_.data(), n_tokens_ * d_);
  ++layer_;
  phase_ = layer_ < model_->arch().n_layers ? phase::dense : phase::output;
  return {};
}

result<void> micro_batch::finish() {
  if (auto ok = expect(phase::output, "finish()"); !ok) return ok;
  const auto& w = model_->weights();
  const int64_t vocab = model_->arch().vocab_size;
  ws_->fit(logits_, n_tokens_ * vocab);
  if (n_tokens_ > 0) {
    ctx_.ops().layer_norm(x_.data(), w.ln_out.gamma.data(), w.ln_out.beta.data(), xn_.data(), n_tokens_, d_,
                          layer_norm_eps);
    ctx_.linear(w.ctc, xn_.data(), n_tokens_, logits_.data());
  }
  for (auto* s : streams_) s->in_step_ = false;
  phase_ = phase::done;
  return {};
}

void micro_batch::preallocate(const step_bounds& b, attention_window window) {
  const auto& a = model_->arch();
  const int64_t n = b.tokens, pairs = n * a.top_k;
  // The engine steps only streams with frames ready: at most one stream per token.
  ws_->commit(streams_, n);
  ws_->commit(attention_segs_, n);
  ws_->commit(context_segs_, n);
  streams_.clear();  // n_streams() is its size
  for (auto* v : {&x_, &xn_, &delta_, &routed_}) ws_->commit(*v, n * d_);
  ws_->commit(acoustic_, n * a.n_acoustic);
  ws_->commit(logits_, n * a.vocab_size);
  for (auto* v : {&row_begin_, &pair_begin_}) ws_->commit(*v, b.blocks + 1);
  for (auto* v : {&row_cursor_, &pair_cursor_}) ws_->commit(*v, b.blocks);
  ws_->commit(replied_, b.blocks);
  // A token's pairs in different blocks are different rows: rows <= pairs.
  for (auto* v : {&row_token_, &block_pair_, &pair_row_}) ws_->commit(*v, pairs);
  preallocate_frontend(a, *ws_);
  preallocate_attention(a, window, b, *ws_);
  preallocate_dense(a, b, *ws_);
  preallocate_dispatch(a, b, plan_, *ws_);
  plan_.overflow.clear();  // the plan of no dispatch yet: nothing over capacity
}

micro_batch::~micro_batch() { abort(); }

void micro_batch::abort() {
  if (phase_ == phase::idle || phase_ == phase::done) return;
  for (auto* s : streams_) {
    s->in_step_ = false;
    s->reset();
  }
  streams_.clear();
  phase_ = phase::idle;
}

stream_logits micro_batch::logits(std::size_t i) const {
  if (phase_ != phase::done || i >= streams_.size()) return {};
  const auto& seg = attention_segs_[i];
  const int32_t vocab = model_->arch().vocab_size;
  return {seg.p0, seg.n, vocab,
          std::span<const float>(logits_.data() + seg.row0 * vocab, static_cast<std::size_t>(seg.n * vocab))};
}

}  // namespace sluice::moe
