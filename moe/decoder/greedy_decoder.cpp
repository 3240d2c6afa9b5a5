#include "moe/decoder/greedy_decoder.hpp"

#include <algorithm>
#include <cmath>

#include "moe/decoder/ctc_frames.hpp"

namespace sluice::moe {

result<greedy_decoder> greedy_decoder::create(const token_table& tokens, const decoder_options& opts) {
  if (auto ok = validate(opts); !ok) return tl::unexpected(ok.error());
  return greedy_decoder(tokens, opts);
}

result<void> greedy_decoder::accept(std::span<const float> logits, int32_t n_frames) {
  const int32_t vocab = tokens_->size();
  if (auto ok = check_logits(logits, n_frames, vocab); !ok) return ok;
  row_.resize(static_cast<std::size_t>(vocab));
  for (int32_t t = 0; t < n_frames; ++t) {
    log_softmax(logits.subspan(static_cast<std::size_t>(t) * row_.size(), row_.size()), row_);
    // The first maximum wins ties, so the result is reproducible.
    const auto best_it = std::max_element(row_.begin(), row_.end());
    const auto best = static_cast<int32_t>(best_it - row_.begin());
    const float posterior = posterior_of(*best_it);
    score_ += *best_it;
    const int32_t frame = n_frames_ + t;
    if (best != tokens_->blank_id()) {
      if (best == prev_token_ && !path_.empty()) {
        path_.back().last_frame = frame;
        path_.back().posterior = std::max(path_.back().posterior, posterior);
      } else {
        path_.push_back({best, frame, frame, posterior});
      }
    }
    prev_token_ = best;
  }
  n_frames_ += n_frames;
  return {};
}

decode_result greedy_decoder::partial() const {
  return make_result(path_, *tokens_, {frame_offset_, opts_.frame_ms}, score_);
}

decode_result greedy_decoder::finalize() {
  decode_result r = partial();
  // One path, one reading: the whole probability the decoder knows of.
  if (opts_.alternatives > 0) r.alternatives = {{r.text, r.words, r.score, 1.0f}};
  frame_offset_ += n_frames_;
  path_.clear();
  prev_token_ = tokens_->blank_id();
  score_ = 0;
  n_frames_ = 0;
  return r;
}

result<decode_result> greedy_decode(std::span<const float> logits, int32_t n_frames, const token_table& tokens,
                                    const decoder_options& opts) {
  auto dec = greedy_decoder::create(tokens, opts);
  if (!dec) return tl::unexpected(dec.error());
  if (auto ok = dec->accept(logits, n_frames); !ok) return tl::unexpected(ok.error());
  return dec->finalize();
}

}  // namespace sluice::moe
