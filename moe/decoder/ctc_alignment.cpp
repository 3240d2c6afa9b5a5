#include "moe/decoder/ctc_alignment.hpp"

#include <cmath>
#include <limits>
#include <string>

namespace sluice::moe {

namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();

// How a Viterbi state was entered, as the number of states stepped over (CTC allows 0, 1 or 2).
using step_back = uint8_t;

float log_prob_of(std::span<const token_log_prob> frame, int32_t token) {
  for (const token_log_prob& t : frame)
    if (t.token == token) return t.log_prob;
  return -std::numeric_limits<float>::infinity();
}

}  // namespace

result<std::vector<aligned_token>> align_labels(const frame_store& frames, std::span<const int32_t> labels,
                                                int32_t blank_id, int32_t vocab_size) {
  std::vector<aligned_token> out;
  const int32_t n_frames = frames.size();
  const auto n_labels = static_cast<int32_t>(labels.size());
  if (n_labels == 0) return out;
  if (n_frames == 0) return fail(errc::invalid_argument, "align: labels but no frames");
  for (int32_t l : labels)
    if (l < 0 || l >= vocab_size || l == blank_id)
      return fail(errc::invalid_argument, "align: label " + std::to_string(l) + " is not a token");

  // Extended sequence: state 2i+1 is labels[i], even states are blanks around them.
  const int32_t n_states = 2 * n_labels + 1;
  auto state_token = [&](int32_t s) { return (s % 2 == 0) ? blank_id : labels[static_cast<std::size_t>(s / 2)]; };

  std::vector<float> dense(static_cast<std::size_t>(vocab_size), -std::numeric_limits<float>::infinity());
  std::vector<double> emit(static_cast<std::size_t>(n_states));
  auto load_frame = [&](int32_t t) {
    auto f = frames.frame(t);
    for (const token_log_prob& x : f) dense[static_cast<std::size_t>(x.token)] = x.log_prob;
    for (int32_t s = 0; s < n_states; ++s) emit[static_cast<std::size_t>(s)] = dense[static_cast<std::size_t>(state_token(s))];
    for (const token_log_prob& x : f) dense[static_cast<std::size_t>(x.token)] = -std::numeric_limits<float>::infinity();
  };

  std::vector<double> prev(static_cast<std::size_t>(n_states), neg_inf), cur(prev.size());
  std::vector<step_back> back(static_cast<std::size_t>(n_frames) * static_cast<std::size_t>(n_states), 0);
  load_frame(0);
  prev[0] = emit[0];
  prev[1] = emit[1];
  for (int32_t t = 1; t < n_frames; ++t) {
    load_frame(t);
    step_back* bp = &back[static_cast<std::size_t>(t) * static_cast<std::size_t>(n_states)];
    for (int32_t s = 0; s < n_states; ++s) {
      const auto us = static_cast<std::size_t>(s);
      double best = prev[us];
      step_back k = 0;
      if (s >= 1 && prev[us - 1] > best) best = prev[us - 1], k = 1;
      const bool can_skip = s >= 2 && s % 2 == 1 && state_token(s) != state_token(s - 2);
      if (can_skip && prev[us - 2] > best) best = prev[us - 2], k = 2;
      cur[us] = best + emit[us];
      bp[s] = k;
    }
    prev.swap(cur);
  }

  int32_t s = n_states - 1;
  if (prev[static_cast<std::size_t>(n_states - 2)] > prev[static_cast<std::size_t>(s)]) s = n_states - 2;
  if (prev[static_cast<std::size_t>(s)] == neg_inf)
    return fail(errc::invalid_argument, "align: no CTC path reads the " + std::to_string(n_labels) +
                                            " labels in " + std::to_string(n_frames) + " frames");

  out.assign(static_cast<std::size_t>(n_labels), aligned_token{});
  for (int32_t i = 0; i < n_labels; ++i) {
    out[static_cast<std::size_t>(i)].token = labels[static_cast<std::size_t>(i)];
    out[static_cast<std::size_t>(i)].first_frame = -1;
  }
  for (int32_t t = n_frames - 1; t >= 0; --t) {
    if (s % 2 == 1) {
      aligned_token& a = out[static_cast<std::size_t>(s / 2)];
      if (a.first_frame < 0) a.last_frame = t;
      a.first_frame = t;
      const float p = posterior_of(log_prob_of(frames.frame(t), a.token));
      if (p > a.posterior) a.posterior = p;
    }
    s -= back[static_cast<std::size_t>(t) * static_cast<std::size_t>(n_states) + static_cast<std::size_t>(s)];
  }
  return out;
}

}  // namespace sluice::moe
