#include "moe/acoustic_stream.hpp"

#include <cmath>

#include "moe/forward.hpp"

namespace sluice::moe {

result<acoustic_stream> acoustic_stream::create(std::shared_ptr<const acoustic_model> model, stream_options options) {
  if (!model) return fail(errc::invalid_argument, "acoustic_stream: no model");
  const auto& s = model->manifest().streaming;
  const attention_window w = options.window.value_or(attention_window{s.chunk_frames, s.left_chunks});
  if (auto ok = check_window(w); !ok) return tl::unexpected(ok.error());
  if (w.chunk_frames == 0)
    return fail(errc::invalid_argument, "acoustic_stream: full attention (chunk_frames 0) cannot stream");
  return acoustic_stream(std::move(model), w, options.compute);
}

acoustic_stream::acoustic_stream(std::shared_ptr<const acoustic_model> model, attention_window window,
                                 compute_options compute)
    : model_(std::move(model)), window_(window), ctx_(compute), front_(*model_), layers_(model_->arch().n_layers) {}

void acoustic_stream::reset() {
  front_.reset();
  pending_x_.clear();
  pending_acoustic_.clear();
  pending_ = 0;
  layers_.assign(model_->arch().n_layers, layer_state{});
  position_ = 0;
  finished_ = false;
}

result<logits_block> acoustic_stream::accept_fbank(const float* frames, int64_t n_frames) {
  const auto& arch = model_->arch();
  if (finished_) return fail(errc::invalid_argument, "acoustic_stream: accept_fbank after finish(); reset() first");
  if (n_frames < 0 || (n_frames > 0 && !frames))
    return fail(errc::invalid_argument, "acoustic_stream: bad fbank (null or negative frame count)");
  for (int64_t i = 0; i < n_frames * arch.n_mels; ++i)
    if (!std::isfinite(frames[i]))
      return fail(errc::invalid_argument, "acoustic_stream: fbank frame " + std::to_string(i / arch.n_mels) +
                                              " of this call, bin " + std::to_string(i % arch.n_mels) + ", is not finite");
  front_.accept(ctx_, frames, n_frames);
  const int64_t chunk = window_.chunk_frames;
  return run((pending_ + front_.ready()) / chunk * chunk);
}

result<logits_block> acoustic_stream::finish() {
  if (finished_) return fail(errc::invalid_argument, "acoustic_stream: finish() called twice; reset() first");
  finished_ = true;
  return run(pending_ + front_.ready());
}

// Moves every ready frame from the frontend to the pending rows, then encodes the first n.
logits_block acoustic_stream::run(int64_t n) {
  const auto& arch = model_->arch();
  const int64_t d = arch.d_model, na = arch.n_acoustic;
  const int64_t fresh = front_.ready();
  pending_x_.resize((pending_ + fresh) * d);
  pending_acoustic_.resize((pending_ + fresh) * na);
  front_.take(ctx_, fresh, pending_x_.data() + pending_ * d, pending_acoustic_.data() + pending_ * na, ws_);
  pending_ += fresh;

  logits_block out;
  out.first_frame = position_;
  out.n_frames = n;
  out.vocab = arch.vocab_size;
  if (n == 0) return out;
  out.logits.resize(n * arch.vocab_size);
  // Chunks start at multiples of chunk_frames, so the oldest key a later chunk can see is
  // left_chunks whole chunks back.
  const int64_t keep = window_.left_chunks >= 0 ? int64_t{window_.left_chunks} * window_.chunk_frames : -1;
  encoder_forward(ctx_, *model_, window_, position_, pending_x_.data(), pending_acoustic_.data(), n, layers_, keep,
                  out.logits.data(), nullptr, ws_);
  pending_x_.erase(pending_x_.begin(), pending_x_.begin() + n * d);
  pending_acoustic_.erase(pending_acoustic_.begin(), pending_acoustic_.begin() + n * na);
  pending_ -= n;
  position_ += n;
  return out;
}

}  // namespace sluice::moe
