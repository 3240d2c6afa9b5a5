#pragma once
/// Runs micro-batches with every routed expert in this thread: one shard holding all of them,
/// no capacity limit. What acoustic_stream and the offline forward use, and the reference the
/// sharded engine must match.

#include <functional>

#include "config/error.hpp"
#include "moe/acoustic_model.hpp"
#include "moe/compute.hpp"
#include "moe/expert_placement.hpp"
#include "moe/expert_shard.hpp"
#include "moe/micro_batch.hpp"
#include "moe/routing.hpp"
#include "moe/token_block.hpp"

namespace sluice::moe {

class local_experts {
 public:
  /// `model` must outlive the object.
  explicit local_experts(const acoustic_model& model, compute_options compute = {});

  /// Preallocates mb (micro_batch::preallocate), this object's block and reply, and mb's
  /// workspace for the experts, for the largest step of `bounds`: one block holds all pairs.
  void preallocate(micro_batch& mb, const step_bounds& bounds, attention_window window);

  /// Runs every remaining layer of `mb` (begun: phase dense or output) and finish(), using
  /// mb's workspace for the experts too. `after_layer(layer)`, when set, is called after each
  /// layer ends (mb.hidden() is then the layer's output, mb.route() its routing).
  /// `reroute(layer, routing)`, when set, is called after each layer's routing is computed and
  /// may change it (tests: forward_options::reroute).
  result<void> run(micro_batch& mb, const std::function<void(int layer)>& after_layer = {},
                   const std::function<void(int layer, routing& r)>& reroute = {});

 private:
  const acoustic_model* model_;
  expert_placement placement_;
  expert_shard experts_;
  token_block block_;
  expert_output reply_;
};

}  // namespace sluice::moe
