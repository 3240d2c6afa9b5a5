#include "moe/acoustic_stream.hpp"

#include "moe/forward.hpp"

namespace sluice::moe {

result<acoustic_stream> acoustic_stream::create(std::shared_ptr<const acoustic_model> model, stream_options options) {
  if (!model) return fail(errc::invalid_argument, "acoustic_stream: no model");
  const auto& s = model->manifest().streaming;
  const attention_window w = options.window.value_or(attention_window{s.chunk_frames, s.left_chunks});
  if (auto ok = check_window(w); !ok) return tl::unexpected(ok.error());
  if (w.chunk_frames == 0)
    return fail(errc::invalid_argument, "acoustic_stream: full attention (chunk_frames 0) cannot stream");
  auto state = stream_state::create(*model, w, options.compute);
  if (!state) return tl::unexpected(state.error());
  return acoustic_stream(std::move(model), std::move(*state), options.compute);
}

acoustic_stream::acoustic_stream(std::shared_ptr<const acoustic_model> model, stream_state state,
                                 compute_options compute)
    : model_(std::move(model)), state_(std::move(state)), batch_(*model_, 0, compute), experts_(*model_, compute) {}

void acoustic_stream::reset() { state_.reset(); }

result<logits_block> acoustic_stream::accept_fbank(const float* frames, int64_t n_frames) {
  if (auto ok = state_.accept_fbank(frames, n_frames); !ok) return tl::unexpected(ok.error());
  return run();
}

result<logits_block> acoustic_stream::finish() {
  if (auto ok = state_.finish(); !ok) return tl::unexpected(ok.error());
  return run();
}

// One step over every frame that is ready: the whole chunks, or after finish() the rest.
result<logits_block> acoustic_stream::run() {
  stream_state* one[] = {&state_};
  if (auto ok = batch_.begin(one, all_chunks); !ok) return tl::unexpected(ok.error());
  if (auto ok = experts_.run(batch_); !ok) return tl::unexpected(ok.error());
  const stream_logits l = batch_.logits(0);
  logits_block out;
  out.first_frame = l.first_frame;
  out.n_frames = l.n_frames;
  out.vocab = l.vocab;
  out.logits.assign(l.logits.begin(), l.logits.end());
  return out;
}

}  // namespace sluice::moe
