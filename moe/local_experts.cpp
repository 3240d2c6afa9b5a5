#include "moe/local_experts.hpp"

#include <algorithm>

#include "moe/routed_experts.hpp"
#include "moe/workspace.hpp"

namespace sluice::moe {

local_experts::local_experts(const acoustic_model& model, compute_options compute)
    : model_(&model),
      placement_(expert_placement::single_shard(model.arch())), experts_(expert_shard::all_experts(model, compute)) {}

void local_experts::preallocate(micro_batch& mb, const step_bounds& bounds, attention_window window) {
  const auto& a = model_->arch();
  step_bounds b = bounds;
  b.blocks = std::max<int32_t>(b.blocks, placement_.n_shards() + 1);
  mb.preallocate(b, window);
  const int64_t pairs = b.tokens * a.top_k;
  auto& ws = mb.scratch();
  ws.commit(block_.rows, b.tokens * a.d_model);  // one row per token of the block
  ws.commit(block_.pair_row, pairs);
  ws.commit(block_.pair_expert, pairs);
  ws.commit(block_.pair_weight, pairs);
  ws.commit(reply_.out, b.tokens * a.d_model);
  preallocate_experts(a, pairs, ws);
}

result<void> local_experts::run(micro_batch& mb, const std::function<void(int layer)>& after_layer,
                                const std::function<void(int layer, routing& r)>& reroute) {
  while (mb.current_phase() == micro_batch::phase::dense) {
    const int layer = mb.layer();
    if (auto ok = mb.run_dense(); !ok) return ok;
    if (reroute) reroute(layer, mb.scratch().route);
    if (auto ok = mb.dispatch(placement_); !ok) return tl::unexpected(ok.error());
    for (int32_t b = 0; b < mb.n_blocks(); ++b) {
      if (!mb.has_block(b)) continue;
      if (auto ok = mb.fill_block(b, block_); !ok) return ok;
      if (auto ok = experts_.run(block_, reply_, mb.scratch()); !ok) return ok;
      if (auto ok = mb.combine(reply_); !ok) return ok;
    }
    if (auto ok = mb.end_layer(); !ok) return ok;
    if (after_layer) after_layer(layer);
  }
  return mb.finish();
}

}  // namespace sluice::moe
