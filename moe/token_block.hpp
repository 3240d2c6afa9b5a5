#pragma once
/// What a micro-batch sends to an expert shard for one layer, and what comes back: plain
/// flat vectors, so that the actors can carry them in messages (and, later, over the wire)
/// unchanged. Neither refers to the model or to the micro-batch by pointer.

#include <cstdint>
#include <vector>

namespace sluice::moe {

/// The tokens of one micro-batch and layer routed to the experts of one shard (or the
/// overflow block: the pairs no shard had room for).
struct token_block {
  int32_t micro_batch = 0;  ///< the sending micro-batch's id
  int64_t step = 0;         ///< the sender's step counter, so a late reply from an earlier step is refused
  int32_t layer = 0;        ///< encoder block
  int32_t shard = 0;        ///< 0 .. n_shards - 1, or n_shards for the overflow block
  int64_t d = 0;            ///< row width (d_model)
  std::vector<float> rows;           ///< f32 [n_rows, d]: each token's LayerNormed hidden state (ln2 output), once
  std::vector<int32_t> pair_row;     ///< i32 [n_pairs]: row of each (token, expert) pair
  std::vector<int32_t> pair_expert;  ///< i32 [n_pairs]: expert id within the layer
  std::vector<float> pair_weight;    ///< f32 [n_pairs]: gate weight

  int64_t n_rows() const { return d > 0 ? static_cast<int64_t>(rows.size()) / d : 0; }
  int64_t n_pairs() const { return static_cast<int64_t>(pair_row.size()); }
};

/// An expert shard's reply to a token_block: per row, the gate-weighted sum of its experts'
/// outputs (the ids echo the block's).
struct expert_output {
  int32_t micro_batch = 0;
  int64_t step = 0;
  int32_t layer = 0;
  int32_t shard = 0;
  int64_t d = 0;
  std::vector<float> out;  ///< f32 [n_rows, d], rows as in the block

  int64_t n_rows() const { return d > 0 ? static_cast<int64_t>(out.size()) / d : 0; }
};

}  // namespace sluice::moe
