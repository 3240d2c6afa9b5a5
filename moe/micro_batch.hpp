#pragma once
/// One step of the acoustic model over many streams at once, cut into the pieces that
/// different actors run: the batcher runs the dense part of each layer (attention with each
/// stream's own cache and positions, shared experts, routers) for every stream's frames
/// together, cuts the routed (token, expert) pairs into one token_block per expert shard,
/// and adds the shards' replies back into the residual; expert actors run the blocks
/// (expert_shard). The same code serves one stream (acoustic_stream) and the offline forward.
///
/// A step, as a state machine (current_phase() says where it is; a call out of turn is an
/// errc::invalid_argument and changes nothing):
///
///     begin(streams)                      idle/done   -> dense (or output when no frames)
///     for each layer:
///       run_dense()                       dense       -> dispatch
///       dispatch(placement, capacity)     dispatch    -> experts
///       fill_block(b, block) for each b with has_block(b); send; combine(reply) for each
///       end_layer()                       experts     -> dense, or output after the last layer
///     finish()                            output      -> done: logits(i) per stream
///
/// All state is in the object (and its workspace): two micro-batches over disjoint streams
/// may be interleaved freely, e.g. one's dense part while the other's blocks are out. Not
/// thread-safe. Buffers only grow; repeated steps of the same shapes allocate nothing
/// (growths() stays flat).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "moe/acoustic_model.hpp"
#include "moe/attention.hpp"
#include "moe/compute.hpp"
#include "moe/dispatch.hpp"
#include "moe/expert_placement.hpp"
#include "moe/moe_layer.hpp"
#include "moe/stream_state.hpp"
#include "moe/token_block.hpp"
#include "moe/workspace.hpp"

namespace sluice::moe {

/// One stream's output of a step: the logits of its frames [first_frame, first_frame +
/// n_frames), valid until the micro-batch's next begin().
struct stream_logits {
  int64_t first_frame = 0;
  int64_t n_frames = 0;
  int32_t vocab = 0;
  std::span<const float> logits;  ///< f32 [n_frames, vocab]
};

class micro_batch {
 public:
  enum class phase { idle, dense, dispatch, experts, output, done };

  /// `model` must outlive the object. `ws`: scratch memory to use (it must outlive the
  /// object and serve nothing else meanwhile); null: the object owns one.
  explicit micro_batch(const acoustic_model& model, int32_t id = 0, compute_options compute = {},
                       workspace* ws = nullptr);
  /// Aborts a step still in progress (see abort()).
  ~micro_batch();
  micro_batch(micro_batch&&) = default;
  micro_batch& operator=(micro_batch&&) = default;

  /// Sizes and writes every buffer of the object and its workspace for the largest step of
  /// `bounds` over streams that attend through `window` (the engine: token_budget tokens, the
  /// most one stream steps, the shards plus the overflow block), so such steps neither
  /// allocate nor touch new memory. The experts' buffers are not included (local_experts,
  /// preallocate_experts). Only while no step is in progress; costs memory, not time.
  void preallocate(const step_bounds& bounds, attention_window window);

  /// Gives up the step in progress (an expert reply never came, an actor died): every lent
  /// stream is released and reset, since its caches may already hold part of this step; its
  /// current utterance is lost and its owner must report that. No-op when no step is running.
  void abort();

  /// Starts a step over `streams` (distinct, of this model, none in another step): each
  /// gives its next stream_state::step_frames(max_chunks) frames (>= 1 chunk; possibly 0
  /// frames), which its frontend subsamples now. The streams stay lent to this object until
  /// finish(). errc::invalid_argument (nothing taken) otherwise.
  result<void> begin(std::span<stream_state* const> streams, int64_t max_chunks = 1);

  /// The current layer's dense part: LayerNorm, attention, residual, LayerNorm, shared
  /// experts, context means and routing (route()).
  result<void> run_dense();

  /// Cuts the current layer's pairs into blocks by `placement` (see dispatch.hpp), at most
  /// `capacity` pairs per shard; pairs over capacity go as `policy` says (spill: the overflow
  /// block; reroute_spill: reroute_overflow first; keep and reroute: settle_overflow, where
  /// `replicated` (u8 [n_layers, n_routed], may be null) says which experts the spillway
  /// holds). Returns this layer's counts. errc::invalid_argument for a placement of another
  /// architecture or a negative capacity.
  result<dispatch_stats> dispatch(const expert_placement& placement, int64_t capacity = unlimited_capacity,
                                  overflow_policy policy = overflow_policy::spill,
                                  const uint8_t* replicated = nullptr);

  /// Blocks of the current dispatch: shards 0 .. n_shards - 1, then the overflow block.
  int32_t n_blocks() const { return plan_.n_shards + 1; }
  /// Block b has pairs (and so needs a reply) in the current dispatch.
  bool has_block(int32_t b) const;
  /// Writes block b into `out` (reusing its memory): the rows of the tokens with pairs in b,
  /// in token order, and those pairs, in token order.
  result<void> fill_block(int32_t b, token_block& out);

  /// Adds a shard's reply into the layer's routed sum. errc::invalid_argument for a reply of
  /// another micro-batch, step or layer, a block without pairs, a second reply for a block,
  /// or a size that does not match the block.
  result<void> combine(const expert_output& reply);
  /// Every block with pairs has been combined.
  bool layer_complete() const { return phase_ == phase::experts && outstanding_ == 0; }
  /// Adds the shared and routed experts' sum to the residual and moves to the next layer.
  result<void> end_layer();

  /// The final LayerNorm and CTC projection; gives the streams back.
  result<void> finish();

  /// Stream i's (order of begin) logits once the phase is done; empty before, or for i out
  /// of range.
  stream_logits logits(std::size_t i) const;

  int32_t id() const { return id_; }
  int64_t step() const { return step_; }
  phase current_phase() const { return phase_; }
  int layer() const { return layer_; }
  std::size_t n_streams() const { return streams_.size(); }
  int64_t n_tokens() const { return n_tokens_; }
  /// The residual stream f32 [n_tokens, D]: after end_layer() the layer's output.
  std::span<const float> hidden() const { return {x_.data(), static_cast<std::size_t>(n_tokens_ * d_)}; }
  /// ln2 of the residual after attention, f32 [n_tokens, D]: what the experts read.
  std::span<const float> normed() const { return {xn_.data(), static_cast<std::size_t>(n_tokens_ * d_)}; }
  /// The current layer's routing (after run_dense) and dispatch (after dispatch).
  const routing& route() const { return ws_->route; }
  const dispatch_plan& plan() const { return plan_; }
  /// Dispatch counts summed over the layers of this step.
  const dispatch_stats& step_stats() const { return stats_; }
  /// Buffer growths of the workspace so far.
  int64_t growths() const { return ws_->growths; }
  /// The workspace, for running experts in this thread between calls (local_experts).
  workspace& scratch() { return *ws_; }

 private:
  result<void> expect(phase p, const char* call) const;
  void index_blocks();

  const acoustic_model* model_;
  int32_t id_;
  compute_ctx ctx_;
  std::unique_ptr<workspace> own_ws_;
  workspace* ws_;
  int64_t d_;

  phase phase_ = phase::idle;
  int64_t step_ = 0;
  int layer_ = 0;
  int64_t n_tokens_ = 0;
  std::vector<stream_state*> streams_;
  std::vector<attention_segment> attention_segs_;  // per stream; caches point at the current layer
  std::vector<context_segment> context_segs_;
  std::vector<float> x_;         // f32 [n_tokens, D]: residual stream
  std::vector<float> acoustic_;  // f32 [n_tokens, n_acoustic]
  std::vector<float> xn_;        // f32 [n_tokens, D]: LayerNorm output
  std::vector<float> delta_;     // f32 [n_tokens, D]: attention output, then the shared experts'
  std::vector<float> routed_;    // f32 [n_tokens, D]: sum of the combined replies
  std::vector<float> logits_;    // f32 [n_tokens, vocab]

  dispatch_plan plan_;
  dispatch_stats stats_;
  // The blocks of the current dispatch, as index lists: block b has rows
  // row_token_[row_begin_[b] .. row_begin_[b + 1]) and pairs block_pair_[pair_begin_[b] ..
  // pair_begin_[b + 1]); pair p reads its block's row pair_row_[p].
  std::vector<int64_t> row_begin_, pair_begin_, row_cursor_, pair_cursor_;
  std::vector<int32_t> row_token_, block_pair_, pair_row_;
  std::vector<uint8_t> replied_;  // [n_blocks]
  int64_t outstanding_ = 0;
};

}  // namespace sluice::moe
