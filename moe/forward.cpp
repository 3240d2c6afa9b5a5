#include "moe/forward.hpp"

#include <algorithm>
#include <cmath>

#include "moe/encoder.hpp"
#include "moe/frontend.hpp"

namespace sluice::moe {
namespace {

constexpr int64_t offline_piece_frames = 256;

}  // namespace

result<void> check_window(attention_window w) {
  if (w.chunk_frames < 0)
    return fail(errc::invalid_argument, "attention window: chunk_frames " + std::to_string(w.chunk_frames) +
                                            " must be >= 0 (0: full attention)");
  if (w.left_chunks < -1)
    return fail(errc::invalid_argument, "attention window: left_chunks " + std::to_string(w.left_chunks) +
                                            " must be >= -1 (-1: unbounded)");
  return {};
}

result<forward_result> forward_offline(const acoustic_model& model, const float* fbank, int64_t n_frames,
                                       const forward_options& options, workspace* ws) {
  const auto& arch = model.arch();
  const attention_window window = options.window.value_or(attention_window{arch.chunk_frames, arch.left_chunks});
  if (auto ok = check_window(window); !ok) return tl::unexpected(ok.error());
  if (n_frames < 0) return fail(errc::invalid_argument, "forward: negative frame count " + std::to_string(n_frames));
  if (n_frames > 0 && !fbank) return fail(errc::invalid_argument, "forward: null fbank with frames");
  for (int64_t i = 0; i < n_frames * arch.n_mels; ++i)
    if (!std::isfinite(fbank[i]))
      return fail(errc::invalid_argument, "forward: fbank frame " + std::to_string(i / arch.n_mels) + " bin " +
                                              std::to_string(i % arch.n_mels) + " is not finite");

  const compute_ctx ctx(options.compute);
  forward_result out;
  out.vocab = arch.vocab_size;
  const int64_t n = subsampled_length(n_frames);
  out.n_frames = n;
  workspace local;
  workspace& w = ws ? *ws : local;
  float* x = scratch(w.input_x, n * arch.d_model);
  float* acoustic = scratch(w.input_acoustic, n * arch.n_acoustic);
  // The frontend takes the input in pieces, so its buffer stays small for any length.
  frontend front(model);
  int64_t made = 0;
  for (int64_t at = 0; at < n_frames; at += offline_piece_frames) {
    front.accept(ctx, fbank + at * arch.n_mels, std::min(offline_piece_frames, n_frames - at));
    const int64_t ready = front.ready();
    front.take(ctx, ready, x + made * arch.d_model, acoustic + made * arch.n_acoustic, w);
    made += ready;
  }
  out.logits.resize(n * arch.vocab_size);
  std::vector<layer_state> layers(arch.n_layers);
  if (options.trace) out.layers.resize(arch.n_layers);
  encoder_forward(ctx, model, window, 0, x, acoustic, n, layers, 0, out.logits.data(),
                  options.trace ? &out.layers : nullptr, w);
  return out;
}

}  // namespace sluice::moe
