#include "moe/decoder/ctc_frames.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace sluice::moe {

result<void> check_logits(std::span<const float> logits, int32_t n_frames, int32_t vocab_size) {
  if (n_frames < 0) return fail(errc::invalid_argument, "decoder: negative frame count " + std::to_string(n_frames));
  const std::size_t want = static_cast<std::size_t>(n_frames) * static_cast<std::size_t>(vocab_size);
  if (logits.size() != want)
    return fail(errc::invalid_argument, "decoder: logits hold " + std::to_string(logits.size()) +
                                            " values, expected " + std::to_string(n_frames) + " frames x " +
                                            std::to_string(vocab_size) + " tokens");
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (!std::isfinite(logits[i]))
      return fail(errc::invalid_argument, "decoder: non-finite logit at frame " +
                                              std::to_string(i / static_cast<std::size_t>(vocab_size)) +
                                              ", token " + std::to_string(i % static_cast<std::size_t>(vocab_size)));
  }
  return {};
}

float posterior_of(float log_prob) { return std::exp(log_prob); }

void log_softmax(std::span<const float> logits, std::span<float> out) {
  if (logits.empty()) return;
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x - max));
  const float log_norm = max + static_cast<float>(std::log(sum));
  for (std::size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - log_norm;
}

void select_tokens(std::span<const float> log_probs, int32_t max_tokens, float min_log_prob,
                   std::vector<token_log_prob>& out) {
  out.clear();
  if (log_probs.empty()) return;
  auto better = [](const token_log_prob& a, const token_log_prob& b) {
    return a.log_prob != b.log_prob ? a.log_prob > b.log_prob : a.token < b.token;
  };
  // The best token stays even below the floor: every frame must let some path through. Only it
  // and the tokens at or above the floor are sorted (CTC frames are peaky: a few of the
  // vocabulary), which gives the same list as sorting all of them and cutting at the floor.
  std::size_t best = 0;
  for (std::size_t i = 1; i < log_probs.size(); ++i)
    if (log_probs[i] > log_probs[best]) best = i;
  for (std::size_t i = 0; i < log_probs.size(); ++i)
    if (log_probs[i] >= min_log_prob || i == best) out.push_back({static_cast<int32_t>(i), log_probs[i]});
  const std::size_t keep = std::min(out.size(), static_cast<std::size_t>(std::max(max_tokens, 1)));
  std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(keep), out.end(), better);
  out.resize(keep);
}

void frame_store::append(std::span<const token_log_prob> frame) {
  entries_.insert(entries_.end(), frame.begin(), frame.end());
  offsets_.push_back(entries_.size());
}

std::span<const token_log_prob> frame_store::frame(int32_t t) const {
  const auto i = static_cast<std::size_t>(t);
  return std::span<const token_log_prob>(entries_).subspan(offsets_[i], offsets_[i + 1] - offsets_[i]);
}

void frame_store::clear() {
  entries_.clear();
  offsets_.assign(1, 0);
}

}  // namespace sluice::moe
