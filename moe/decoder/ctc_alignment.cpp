#include "moe/decoder/ctc_alignment.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace sluice::moe {

namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();

// How a Viterbi state was entered, as the number of states stepped over (CTC allows 0, 1 or 2).
using step_back = uint8_t;

// Back pointers kept per thread between calls, at most (a 60 s utterance of characters at the
// model's 40 ms frames: 1,500 frames x ~1,500 states).
constexpr std::size_t max_kept_scratch = std::size_t{4} << 20;

float log_prob_of(std::span<const token_log_prob> frame, int32_t token) {
  for (const token_log_prob& t : frame)
    if (t.token == token) return t.log_prob;
  return -std::numeric_limits<float>::infinity();
}

// One frame of the Viterbi recursion over the states lo..hi (prev and cur are offset by 2, so
// states -1 and -2 read -inf): a state is entered from itself, from the state before, or (where
// skip_pen is 0, not -inf) from two before; ties keep the nearer state. Branch-free, so the
// compiler vectorises it; cloned for AVX-512 / AVX2 (the build's baseline is SSE2) and picked
// at load time by the CPU. The same additions and comparisons as a scalar loop: bit-identical.
// Not cloned under ThreadSanitizer: the clones' resolver runs while the dynamic loader relocates
// the program, before TSan's runtime is set up, and GCC instruments it (it crashed every TSan
// test binary at start, CI's `make tsan-build` included).
#if defined(__SANITIZE_THREAD__)
#define SLUICE_VITERBI_CLONES
#else
#define SLUICE_VITERBI_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
SLUICE_VITERBI_CLONES void viterbi_step(
    const double* __restrict prev, double* __restrict cur, const double* __restrict emit,
    const double* __restrict skip_pen, step_back* __restrict bp, int32_t lo, int32_t hi) {
  for (int32_t st = lo; st <= hi; ++st) {
    const double a = prev[st], b = prev[st - 1], c = prev[st - 2] + skip_pen[st];
    const double ab = std::max(a, b);  // a unless b > a
    cur[st] = std::max(ab, c) + emit[st];
    const int take_b = b > a, take_c = c > ab;
    bp[st] = static_cast<step_back>((take_b & (take_c ^ 1)) | (take_c << 1));
  }
}

}  // namespace

result<std::vector<aligned_token>> align_labels(const frame_store& frames, std::span<const int32_t> labels,
                                                int32_t blank_id, int32_t vocab_size, int32_t blank_alias) {
  std::vector<aligned_token> out;
  const int32_t n_frames = frames.size();
  const auto n_labels = static_cast<int32_t>(labels.size());
  if (n_labels == 0) return out;
  if (n_frames == 0) return fail(errc::invalid_argument, "align: labels but no frames");
  for (int32_t l : labels)
    if (l < 0 || l >= vocab_size || l == blank_id || l == blank_alias)
      return fail(errc::invalid_argument, "align: label " + std::to_string(l) + " is not a token");
  if (blank_alias >= vocab_size) return fail(errc::invalid_argument, "align: blank alias is not a token");

  // Extended sequence: state 2i+1 is labels[i], even states are blanks around them.
  const int32_t n_states = 2 * n_labels + 1;
  // Scratch kept per thread (decoders call this for every partial result): no allocation once
  // warm. The arrays of states are offset by 2 so state s reads s - 1 and s - 2 without a test.
  thread_local std::vector<float> dense;
  thread_local std::vector<int32_t> token_of;
  thread_local std::vector<double> skip_pen;  // 0 where a state may be entered from two before, else -inf
  thread_local std::vector<double> emit, prev_buf, cur_buf;
  thread_local std::vector<step_back> back;
  dense.assign(static_cast<std::size_t>(vocab_size), -std::numeric_limits<float>::infinity());
  token_of.resize(static_cast<std::size_t>(n_states));
  skip_pen.resize(static_cast<std::size_t>(n_states));
  for (int32_t st = 0; st < n_states; ++st) {
    const auto u = static_cast<std::size_t>(st);
    token_of[u] = (st % 2 == 0) ? blank_id : labels[static_cast<std::size_t>(st / 2)];
    skip_pen[u] = st >= 2 && st % 2 == 1 && token_of[u] != token_of[u - 2] ? 0.0 : neg_inf;
  }
  emit.resize(static_cast<std::size_t>(n_states));
  // emit[s] for the states lo..hi at frame t.
  auto load_frame = [&](int32_t t, int32_t lo, int32_t hi) {
    auto f = frames.frame(t);
    for (const token_log_prob& x : f) dense[static_cast<std::size_t>(x.token)] = x.log_prob;
    if (blank_alias >= 0) {
      const auto b = static_cast<std::size_t>(blank_id);
      dense[b] = std::max(dense[b], dense[static_cast<std::size_t>(blank_alias)]);
    }
    for (int32_t st = lo; st <= hi; ++st)
      emit[static_cast<std::size_t>(st)] = dense[static_cast<std::size_t>(token_of[static_cast<std::size_t>(st)])];
    dense[static_cast<std::size_t>(blank_id)] = -std::numeric_limits<float>::infinity();
    for (const token_log_prob& x : f) dense[static_cast<std::size_t>(x.token)] = -std::numeric_limits<float>::infinity();
  };

  // Only states that may lie on a complete path are computed (the band): at frame t a path has
  // reached at most state 2t + 1, and must still be able to reach state n_states - 2 by the last
  // frame, two states a frame. Within that, only states a path can be in at all: none above the
  // highest state finite at the previous frame plus two, none below the lowest one (a state is
  // entered from itself or the two before it). CTC frames are peaky (a frame lists a few
  // tokens), so this leaves about 40% of the band on real calls. Every state outside is -inf on
  // every complete path, so the result is the full recursion's. Entries of the arrays outside
  // the previous frame's range hold stale values: the two the step may read on each side are
  // set to -inf first.
  prev_buf.assign(static_cast<std::size_t>(n_states) + 2, neg_inf);
  cur_buf.assign(prev_buf.size(), neg_inf);
  double* prev = prev_buf.data() + 2;
  double* cur = cur_buf.data() + 2;
  back.resize(static_cast<std::size_t>(n_frames) * static_cast<std::size_t>(n_states));
  auto band_low = [&](int32_t t) {
    return std::max<int64_t>(0, int64_t{n_states} - 2 - 2 * (int64_t{n_frames} - 1 - t));
  };
  int32_t prev_lo = 0, prev_hi = std::min(n_states - 1, 1);
  load_frame(0, prev_lo, prev_hi);
  if (band_low(0) <= 0) prev[0] = emit[0];
  if (band_low(0) <= 1 && n_states > 1) prev[1] = emit[1];
  for (int32_t t = 1; t < n_frames; ++t) {
    int32_t first = prev_lo, last = prev_hi;  // the previous frame's finite states
    while (first <= last && prev[first] == neg_inf) ++first;
    while (last >= first && prev[last] == neg_inf) --last;
    const auto lo = static_cast<int32_t>(std::max<int64_t>(band_low(t), first));
    const int32_t hi = std::min({n_states - 1, 2 * t + 1, last + 2});
    if (first > last || lo > hi) {  // no path goes on (or more labels than the frames can read)
      prev_lo = 0, prev_hi = -1;
      break;
    }
    for (int32_t st = std::max(lo - 2, -2); st < prev_lo; ++st) prev[st] = neg_inf;
    for (int32_t st = prev_hi + 1; st <= hi; ++st) prev[st] = neg_inf;
    load_frame(t, lo, hi);
    viterbi_step(prev, cur, emit.data(), skip_pen.data(),
                 &back[static_cast<std::size_t>(t) * static_cast<std::size_t>(n_states)], lo, hi);
    std::swap(prev, cur);
    prev_lo = lo, prev_hi = hi;
  }
  // The last frame's two end states, -inf where it did not compute them.
  for (int32_t st : {n_states - 2, n_states - 1})
    if (st >= 0 && (st < prev_lo || st > prev_hi)) prev[st] = neg_inf;

  int32_t s = n_states - 1;
  if (prev[n_states - 2] > prev[s]) s = n_states - 2;
  if (prev[s] == neg_inf)
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
    if (t == 0) break;
    s -= back[static_cast<std::size_t>(t) * static_cast<std::size_t>(n_states) + static_cast<std::size_t>(s)];
  }
  // A very long utterance's back pointers are not kept for the thread's life.
  if (back.capacity() > max_kept_scratch) std::vector<step_back>().swap(back);
  return out;
}

}  // namespace sluice::moe
