#pragma once
/// The encoder blocks, final LayerNorm and CTC projection over a run of subsampled frames,
/// shared by the offline forward and streams: a stream runs it chunk by chunk with the caches
/// of earlier chunks, the offline forward once over everything with empty caches.

#include <cstdint>
#include <vector>

#include "moe/acoustic_model.hpp"
#include "moe/attention.hpp"
#include "moe/compute.hpp"
#include "moe/forward.hpp"
#include "moe/moe_layer.hpp"
#include "moe/workspace.hpp"

namespace sluice::moe {

/// What one block remembers of earlier frames. Per stream.
struct layer_state {
  kv_cache kv;
  context_cache context;
};

/// x f32 [n, D] (subsampled frames at positions [p0, p0 + n), overwritten with the last
/// block's output), acoustic f32 [n, n_acoustic] -> logits f32 [n, vocab].
/// `layers` ([n_layers]) hold the state of the frames before p0 and are advanced past these;
/// each attention cache keeps the last `keep` frames (keep < 0: all). With `trace`, each
/// layer's output and routing are appended to (*trace)[layer].
void encoder_forward(const compute_ctx& ctx, const acoustic_model& model, attention_window window, int64_t p0,
                     float* x, const float* acoustic, int64_t n, std::vector<layer_state>& layers, int64_t keep,
                     float* logits, std::vector<layer_trace>* trace, workspace& ws);

}  // namespace sluice::moe
