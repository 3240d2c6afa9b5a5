#include "moe/recognizer/recognizer.hpp"

#include <algorithm>

namespace sluice::moe {

recognizer::recognizer(std::shared_ptr<const recognizer_resources> res)
    : res_(std::move(res)), batch_(*res_->model, 0, res_->compute), experts_(*res_->model, res_->compute) {}

result<recognizer_stream> recognizer::create_stream(const stream_config& config) const {
  auto prepared = res_->prepare(config);
  if (!prepared) return tl::unexpected(prepared.error());
  auto shared = std::make_shared<const prepared_stream>(std::move(*prepared));
  auto state = stream_state::create(*res_->model, res_->window, res_->compute);
  if (!state) return tl::unexpected(state.error());
  auto dec = res_->make_decoder(*shared);
  if (!dec) return tl::unexpected(dec.error());
  return recognizer_stream(res_, std::move(shared), std::move(*state), std::move(*dec));
}

result<void> recognizer::decode_streams(std::span<recognizer_stream* const> streams, int64_t max_chunks) {
  if (max_chunks < 1) return fail(errc::invalid_argument, "recognizer: max_chunks must be >= 1");
  picked_.clear();
  states_.clear();
  for (auto* s : streams) {
    if (!s) return fail(errc::invalid_argument, "recognizer: a null stream");
    if (&s->state_.model() != res_->model.get())
      return fail(errc::invalid_argument, "recognizer: a stream of another model");
    if (std::find(picked_.begin(), picked_.end(), s) != picked_.end())
      return fail(errc::invalid_argument, "recognizer: a stream given twice to one step");
    if (s->is_ready()) picked_.push_back(s);
  }
  if (picked_.empty()) return {};
  for (auto* s : picked_) states_.push_back(&s->state_);
  auto ok = batch_.begin(states_, max_chunks);
  if (ok) ok = experts_.run(batch_);
  if (!ok) {
    // begin() took nothing on failure; a failure later leaves the streams lent: abort()
    // releases and resets them.
    batch_.abort();
    for (auto* s : picked_) s->fail_with(ok.error());
    return ok;
  }
  for (std::size_t i = 0; i < picked_.size(); ++i) {
    const stream_logits l = batch_.logits(i);
    picked_[i]->accept_logits(l.logits, l.n_frames);
  }
  return {};
}

}  // namespace sluice::moe
