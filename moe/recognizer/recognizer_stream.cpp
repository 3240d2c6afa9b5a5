#include "moe/recognizer/recognizer_stream.hpp"

namespace sluice::moe {

recognizer_stream::recognizer_stream(std::shared_ptr<const recognizer_resources> res,
                                     std::shared_ptr<const prepared_stream> prepared, stream_state state,
                                     ctc_decoder decoder)
    : res_(std::move(res)), prepared_(std::move(prepared)), state_(std::move(state)), decoder_(std::move(decoder)) {}

result<void> recognizer_stream::accept_features(const float* frames, int64_t n_frames) {
  if (status_ != stream_status::open)
    return fail(errc::invalid_argument, "recognizer stream: features after input_finished, a failure or an abort");
  return state_.accept_fbank(frames, n_frames);
}

result<void> recognizer_stream::input_finished() {
  if (status_ != stream_status::open)
    return fail(errc::invalid_argument, "recognizer stream: input_finished twice, or after a failure or an abort");
  if (auto ok = state_.finish(); !ok) return ok;
  status_ = stream_status::finishing;
  if (state_.done()) finalize();  // nothing left for the model: the (maybe empty) final now
  return {};
}

bool recognizer_stream::is_ready() const {
  return (status_ == stream_status::open || status_ == stream_status::finishing) && state_.ready_frames() > 0;
}

recognition_result recognizer_stream::get_result() const {
  if (status_ == stream_status::final) return final_;
  recognition_result r;
  if (status_ == stream_status::failed || status_ == stream_status::aborted || !decoder_) return r;
  auto d = decoder_->partial();
  r.text = std::move(d.text);
  r.words = std::move(d.words);
  r.frames = state_.position();
  return r;
}

void recognizer_stream::abort() {
  if (status_ == stream_status::final) return;
  status_ = stream_status::aborted;
}

result<void> recognizer_stream::reset() {
  auto dec = res_->make_decoder(*prepared_);
  if (!dec) {
    fail_with(dec.error());
    return tl::unexpected(dec.error());
  }
  state_.reset();
  decoder_.emplace(std::move(*dec));
  status_ = stream_status::open;
  failure_.reset();
  final_ = {};
  return {};
}

void recognizer_stream::fail_with(error e) {
  status_ = stream_status::failed;
  failure_ = std::move(e);
}

void recognizer_stream::accept_logits(std::span<const float> logits, int64_t n_frames) {
  if (n_frames > 0) {
    if (auto ok = decoder_->accept(logits, static_cast<int32_t>(n_frames)); !ok) {
      fail_with(ok.error());
      return;
    }
  }
  if (state_.done()) finalize();
}

void recognizer_stream::finalize() {
  auto d = decoder_->finalize();
  final_.text = std::move(d.text);
  final_.words = std::move(d.words);
  final_.is_final = true;
  final_.frames = state_.position();
  status_ = stream_status::final;
}

}  // namespace sluice::moe
