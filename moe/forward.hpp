#pragma once
/// Offline forward of the acoustic model: a whole utterance's fbank in, CTC logits out, with
/// the same chunked attention a stream uses (so acoustic_stream gives the same logits).

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "config/error.hpp"
#include "moe/acoustic_model.hpp"
#include "moe/attention.hpp"
#include "moe/compute.hpp"
#include "moe/workspace.hpp"

namespace sluice::moe {

struct forward_options {
  /// Attention window; unset: the trained one (architecture chunk_frames / left_chunks).
  std::optional<attention_window> window;
  compute_options compute;
  /// Also return every block's output and routing (tests, analysis).
  bool trace = false;
  /// Tests: called with each layer's routing once it is computed, before the tokens go to
  /// their experts; it may change the choices (experts, groups, weights).
  std::function<void(int layer, routing& r)> reroute;
};

/// One encoder block's output and routing decisions, for parity tests.
struct layer_trace {
  std::vector<float> out;        ///< f32 [n_frames, d_model], hidden state after the block
  std::vector<int32_t> experts;  ///< i32 [n_frames, top_k], chosen experts sorted ascending
  std::vector<int32_t> groups;   ///< i32 [n_frames, top_groups], chosen groups sorted ascending
};

struct forward_result {
  int64_t n_frames = 0;          ///< subsampled (40 ms) frames: subsampled_length(input frames)
  int32_t vocab = 0;
  std::vector<float> logits;     ///< f32 [n_frames, vocab]
  std::vector<layer_trace> layers;  ///< [n_layers] when traced, else empty
};

/// Checks a window: chunk_frames >= 0, left_chunks >= -1 (errc::invalid_argument).
result<void> check_window(attention_window w);

/// fbank f32 [n_frames, n_mels] (raw natural-log mel power, as dsp/ computes it) -> logits.
/// Errors (errc::invalid_argument): a bad window, a null fbank with frames, a value that is not
/// finite (naming the frame and bin). Fewer than 7 frames give 0 output frames.
/// `ws` is scratch memory to reuse across calls from one thread (a fresh one when null).
result<forward_result> forward_offline(const acoustic_model& model, const float* fbank, int64_t n_frames,
                                       const forward_options& options = {}, workspace* ws = nullptr);

}  // namespace sluice::moe
