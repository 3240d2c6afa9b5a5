#include "moe/local_experts.hpp"

namespace sluice::moe {

local_experts::local_experts(const acoustic_model& model, compute_options compute)
    : placement_(expert_placement::single_shard(model.arch())), experts_(expert_shard::all_experts(model, compute)) {}

result<void> local_experts::run(micro_batch& mb, const std::function<void(int layer)>& after_layer) {
  while (mb.current_phase() == micro_batch::phase::dense) {
    const int layer = mb.layer();
    if (auto ok = mb.run_dense(); !ok) return ok;
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
