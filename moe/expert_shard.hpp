#pragma once
/// What an expert actor runs: the routed experts of one shard, computed on token blocks with
/// the grouped GEMM. Holds a reference to the shared, read-only model weights and the set of
/// (layer, expert) it serves; no per-call state, so one object may serve any number of
/// callers, each with its own workspace.

#include <cstdint>
#include <vector>

#include "config/error.hpp"
#include "moe/acoustic_model.hpp"
#include "moe/compute.hpp"
#include "moe/expert_placement.hpp"
#include "moe/token_block.hpp"
#include "moe/workspace.hpp"

namespace sluice::moe {

class expert_shard {
 public:
  /// The experts `placement` puts on `shard` (errc::invalid_argument for a shard out of range
  /// or a placement for another architecture). `model` must outlive this object.
  static result<expert_shard> create(const acoustic_model& model, const expert_placement& placement, int32_t shard,
                                     compute_options compute = {});

  /// Every expert of every layer: the in-process forward (lanes, moe::local_experts).
  static expert_shard all_experts(const acoustic_model& model, compute_options compute = {});

  /// The experts marked in `held` (u8 [n_layers, n_routed], nonzero: held): a spillway's
  /// replicas. errc::invalid_argument for a mask of another size.
  static result<expert_shard> of_experts(const acoustic_model& model, std::vector<uint8_t> held,
                                         compute_options compute = {});

  /// How many (layer, expert) pairs this shard holds.
  int64_t n_held() const;

  /// out.out f32 [n_rows, D] = per row of the block, the sum over its pairs of pair_weight *
  /// expert(row), added in ascending expert order; out's ids echo the block's. Reuses out's
  /// and ws's memory. errc::invalid_argument (out unchanged) for a block that does not fit
  /// the model (layer, width, sizes, a row out of range) or names an expert this shard does
  /// not hold.
  result<void> run(const token_block& block, expert_output& out, workspace& ws) const;

  bool holds(int layer, int32_t expert) const { return held_[layer * model_->arch().n_routed + expert] != 0; }

 private:
  expert_shard(const acoustic_model& model, compute_options compute, std::vector<uint8_t> held)
      : model_(&model), ctx_(compute), held_(std::move(held)) {}

  result<void> check(const token_block& block) const;

  const acoustic_model* model_;
  compute_ctx ctx_;
  std::vector<uint8_t> held_;  // u8 [n_layers, n_routed]: 1 where this shard holds the expert
};

}  // namespace sluice::moe
