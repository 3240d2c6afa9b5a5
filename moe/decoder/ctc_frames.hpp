#pragma once
/// Per-frame CTC posteriors: checking the model's logits, turning a frame into ln posteriors, the
/// per-frame token pruning the beam search uses, and the store of pruned frames an utterance keeps
/// so that the best path of any label sequence can be found again (ctc_alignment.hpp).

#include <cstdint>
#include <span>
#include <vector>

#include "config/error.hpp"

namespace sluice::moe {

/// One token's ln posterior at one frame.
struct token_log_prob {
  int32_t token = 0;
  float log_prob = 0;
};

/// A ln posterior as a probability in [0, 1]; every decoder reports confidences through this so
/// they agree to the bit.
float posterior_of(float log_prob);

/// errc::invalid_argument unless `logits` holds exactly n_frames * vocab_size finite values
/// (f32 [n_frames, vocab_size]) and n_frames >= 0.
result<void> check_logits(std::span<const float> logits, int32_t n_frames, int32_t vocab_size);

/// out[i] = ln softmax(logits)[i]; `out` has logits.size() elements. Logits that already are ln
/// posteriors come back unchanged (up to rounding).
void log_softmax(std::span<const float> logits, std::span<float> out);

/// The frame's `max_tokens` most probable tokens whose ln posterior is at least `min_log_prob`,
/// best first (ties: lower id first); the best token is always included. Writes into `out`.
void select_tokens(std::span<const float> log_probs, int32_t max_tokens, float min_log_prob,
                   std::vector<token_log_prob>& out);

/// The pruned frames of one utterance, in order: for each frame the tokens the search considered.
/// Tokens absent from a frame have ln posterior -inf there.
class frame_store {
 public:
  void append(std::span<const token_log_prob> frame);
  int32_t size() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  std::span<const token_log_prob> frame(int32_t t) const;
  void clear();
  /// Heap bytes held.
  std::size_t memory_bytes() const {
    return entries_.capacity() * sizeof(token_log_prob) + offsets_.capacity() * sizeof(std::size_t);
  }

 private:
  std::vector<token_log_prob> entries_;
  std::vector<std::size_t> offsets_{0};  ///< frame t is entries_[offsets_[t], offsets_[t+1])
};

}  // namespace sluice::moe
