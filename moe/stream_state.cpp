#include "moe/stream_state.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "moe/forward.hpp"

namespace sluice::moe {

result<stream_state> stream_state::create(const acoustic_model& model, attention_window window,
                                          compute_options compute) {
  if (auto ok = check_window(window); !ok) return tl::unexpected(ok.error());
  return stream_state(model, window, compute);
}

stream_state::stream_state(const acoustic_model& model, attention_window window, compute_options compute)
    : model_(&model), window_(window), ctx_(compute), front_(model), layers_(model.arch().n_layers) {}

void stream_state::reset() {
  front_.reset();
  layers_.assign(model_->arch().n_layers, layer_state{});
  position_ = 0;
  finished_ = false;
}

result<void> stream_state::accept_fbank(const float* frames, int64_t n_frames) {
  const int64_t mels = model_->arch().n_mels;
  if (in_step_) return fail(errc::invalid_argument, "stream: accept_fbank while the stream is in a micro-batch");
  if (finished_) return fail(errc::invalid_argument, "stream: accept_fbank after finish(); reset() first");
  if (n_frames < 0 || (n_frames > 0 && !frames))
    return fail(errc::invalid_argument, "stream: bad fbank (null or negative frame count)");
  for (int64_t i = 0; i < n_frames * mels; ++i)
    if (!std::isfinite(frames[i]))
      return fail(errc::invalid_argument, "stream: fbank frame " + std::to_string(i / mels) + " of this call, bin " +
                                              std::to_string(i % mels) + ", is not finite");
  front_.accept(ctx_, frames, n_frames);
  return {};
}

result<void> stream_state::finish() {
  if (in_step_) return fail(errc::invalid_argument, "stream: finish() while the stream is in a micro-batch");
  if (finished_) return fail(errc::invalid_argument, "stream: finish() called twice; reset() first");
  finished_ = true;
  return {};
}

int64_t stream_state::ready_frames() const {
  const int64_t made = front_.ready(), chunk = window_.chunk_frames;
  if (finished_) return made;
  return chunk > 0 ? made / chunk * chunk : 0;
}

int64_t stream_state::step_frames(int64_t max_chunks) const {
  const int64_t ready = ready_frames(), chunk = window_.chunk_frames;
  if (chunk == 0 || max_chunks >= ready / chunk + 1) return ready;
  return std::min(ready, max_chunks * chunk);
}

}  // namespace sluice::moe
