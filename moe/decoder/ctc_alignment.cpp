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

// Row memory a stream keeps through reset() for its next utterance, at most; a longer
// utterance's is given back.
constexpr std::size_t max_kept_bytes = std::size_t{256} << 10;

// Every row keeps its back pointers, four to a byte; the values of every checkpoint_rows-th row
// are kept (and the last row's), so a call that must start again in the middle recomputes at
// most checkpoint_rows - 1 rows more, and the rows' memory is 1/4 + 8 / checkpoint_rows bytes a
// state.
constexpr int32_t checkpoint_rows = 16;

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
  ctc_aligner a(blank_id, vocab_size, blank_alias);
  return a.align(frames, labels);
}

ctc_aligner::ctc_aligner(int32_t blank_id, int32_t vocab_size, int32_t blank_alias)
    : blank_id_(blank_id), vocab_size_(vocab_size), blank_alias_(blank_alias) {}

void ctc_aligner::reset() {
  labels_.clear();
  rows_.clear();
  values_.clear();
  back_.clear();
  if (values_.capacity() * sizeof(double) + back_.capacity() + rows_.capacity() * sizeof(row) > max_kept_bytes) {
    std::vector<double>().swap(values_);
    std::vector<step_back>().swap(back_);
    std::vector<row>().swap(rows_);
  }
}

std::size_t ctc_aligner::memory_bytes() const {
  return labels_.capacity() * sizeof(int32_t) + rows_.capacity() * sizeof(row) + values_.capacity() * sizeof(double) +
         back_.capacity() + token_of_.capacity() * sizeof(int32_t) +
         (skip_pen_.capacity() + emit_.capacity() + prev_buf_.capacity() + cur_buf_.capacity()) * sizeof(double) +
         step_buf_.capacity() + dense_.capacity() * sizeof(float);
}

// emit_[s] for the states lo..hi: the frame's ln posterior of each state's token (a blank state:
// blank's, or its alias' where larger).
void ctc_aligner::load_emissions(std::span<const token_log_prob> frame, int32_t lo, int32_t hi) {
  for (const token_log_prob& x : frame) dense_[static_cast<std::size_t>(x.token)] = x.log_prob;
  const auto b = static_cast<std::size_t>(blank_id_);
  if (blank_alias_ >= 0) dense_[b] = std::max(dense_[b], dense_[static_cast<std::size_t>(blank_alias_)]);
  double* emit = emit_.data() + 2;
  for (int32_t st = lo; st <= hi; ++st) emit[st] = dense_[static_cast<std::size_t>(token_of_[static_cast<std::size_t>(st)])];
  dense_[b] = -std::numeric_limits<float>::infinity();
  for (const token_log_prob& x : frame) dense_[static_cast<std::size_t>(x.token)] = -std::numeric_limits<float>::infinity();
}

void ctc_aligner::compute_row(const frame_store& frames, int32_t t) {
  const auto n_states = static_cast<int32_t>(token_of_.size());
  double* prev = prev_buf_.data() + 2;
  double* cur = cur_buf_.data() + 2;
  int32_t lo = 0, hi = std::min(n_states - 1, 1);  // frame 0: a path starts in state 0 or 1
  if (t > 0) {
    const row& p = rows_[static_cast<std::size_t>(t) - 1];
    // A state is entered from itself or the two before it: none below the lowest finite state,
    // none above the highest plus two, nor above 2t + 1 (two states a frame at most).
    lo = p.first;
    hi = std::min({n_states - 1, 2 * t + 1, p.last + 2});
    if (p.first > p.last) hi = lo - 1;  // no path goes on
    // prev_ holds row t - 1 on its finite states only: the states the step reads around them
    // are unreachable.
    for (int32_t st = std::max(lo - 2, -2); st < p.first; ++st) prev[st] = neg_inf;
    for (int32_t st = std::max(p.last + 1, lo); st <= hi; ++st) prev[st] = neg_inf;
  }
  // Row t - 1's values are kept only at a checkpoint (its back pointers always).
  if (t > 0 && t % checkpoint_rows != 0) {
    row& p = rows_[static_cast<std::size_t>(t) - 1];
    if (p.has_values) values_.resize(p.values);
    p.has_values = false;
  }
  int32_t first = lo, last = hi;
  if (lo <= hi) {
    load_emissions(frames.frame(t), lo, hi);
    const double* emit = emit_.data() + 2;
    if (t == 0) {
      for (int32_t st = lo; st <= hi; ++st) cur[st] = emit[st];
    } else {
      viterbi_step(prev, cur, emit, skip_pen_.data() + 2, step_buf_.data(), lo, hi);
    }
    while (first <= last && cur[first] == neg_inf) ++first;
    while (last >= first && cur[last] == neg_inf) --last;
  }
  row r;
  r.back = static_cast<uint32_t>(back_.size());
  r.values = static_cast<uint32_t>(values_.size());
  if (first <= last) {
    r.first = first, r.last = last;
    values_.insert(values_.end(), cur + first, cur + last + 1);
    // Four to a byte; the bits past `last` in the last byte are never read (step_buf_ has three
    // states of room past the last state, each 0, 1 or 2).
    const auto bytes = static_cast<std::size_t>(last - first + 4) / 4;
    back_.resize(back_.size() + bytes);
    uint8_t* packed = back_.data() + r.back;
    const uint8_t* step = step_buf_.data() + first;
    for (std::size_t j = 0; j < bytes; ++j, step += 4)
      packed[j] = static_cast<uint8_t>(step[0] | step[1] << 2 | step[2] << 4 | step[3] << 6);
  }
  rows_.push_back(r);
  ++rows_computed_;
  std::swap(prev_buf_, cur_buf_);
}

result<std::vector<aligned_token>> ctc_aligner::align(const frame_store& frames, std::span<const int32_t> labels) {
  std::vector<aligned_token> out;
  const int32_t n_frames = frames.size();
  const auto n_labels = static_cast<int32_t>(labels.size());
  if (n_labels == 0) return out;
  if (n_frames == 0) return fail(errc::invalid_argument, "align: labels but no frames");
  for (int32_t l : labels)
    if (l < 0 || l >= vocab_size_ || l == blank_id_ || l == blank_alias_)
      return fail(errc::invalid_argument, "align: label " + std::to_string(l) + " is not a token");
  if (blank_alias_ >= vocab_size_) return fail(errc::invalid_argument, "align: blank alias is not a token");
  if (blank_id_ < 0 || blank_id_ >= vocab_size_) return fail(errc::invalid_argument, "align: blank is not a token");
  if (n_frames < static_cast<int32_t>(rows_.size())) reset();  // another utterance's frames

  // Extended sequence: state 2i+1 is labels[i], even states are blanks around them.
  const int32_t n_states = 2 * n_labels + 1;
  // The labels shared with the rows' (p of them): states up to 2p (the blank after them) are the
  // same states, with the same values at every frame.
  std::size_t shared = 0;
  while (shared < labels_.size() && shared < labels.size() && labels_[shared] == labels[shared]) ++shared;
  const auto p = static_cast<int32_t>(shared);
  // The first row that may hold a state past 2p: row 0 when p is 0, else the row after the first
  // that reaches state 2p - 1 (such a state is entered from 2p or 2p - 1). The same labels
  // throughout: no row changes.
  auto t0 = static_cast<int32_t>(rows_.size());
  if (p == 0) t0 = 0;
  else if (shared != labels_.size() || labels_.size() != labels.size())
    for (int32_t t = 1; t <= static_cast<int32_t>(rows_.size()); ++t)
      if (rows_[static_cast<std::size_t>(t) - 1].last >= 2 * p - 1) {
        t0 = t;
        break;
      }
  // Start from the last row before t0 whose values are kept (row t0 - 1, or a checkpoint up to
  // checkpoint_rows before it: the rows between hold states up to 2p only, the same again).
  while (t0 > 0 && !rows_[static_cast<std::size_t>(t0) - 1].has_values) --t0;
  if (t0 < static_cast<int32_t>(rows_.size())) {
    const row& from = rows_[static_cast<std::size_t>(t0)];
    values_.resize(from.values);
    back_.resize(from.back);
    rows_.resize(static_cast<std::size_t>(t0));
  }
  labels_.assign(labels.begin(), labels.end());

  const auto states = static_cast<std::size_t>(n_states);
  token_of_.resize(states);
  skip_pen_.assign(states + 2, neg_inf);
  for (int32_t st = 0; st < n_states; ++st) {
    const auto u = static_cast<std::size_t>(st);
    token_of_[u] = (st % 2 == 0) ? blank_id_ : labels[static_cast<std::size_t>(st / 2)];
    if (st >= 2 && st % 2 == 1 && token_of_[u] != token_of_[u - 2]) skip_pen_[u + 2] = 0.0;
  }
  // -inf for every token between frames (load_emissions puts back what it sets).
  if (dense_.size() != static_cast<std::size_t>(vocab_size_))
    dense_.assign(static_cast<std::size_t>(vocab_size_), -std::numeric_limits<float>::infinity());
  emit_.resize(states + 2);
  prev_buf_.resize(states + 2);
  cur_buf_.resize(states + 2);
  step_buf_.resize(states + 3);
  // The row before the first to compute, dense, on its finite states.
  if (t0 > 0) {
    const row& r = rows_[static_cast<std::size_t>(t0) - 1];
    std::copy(values_.begin() + static_cast<std::ptrdiff_t>(r.values),
              values_.begin() + static_cast<std::ptrdiff_t>(r.values) + (r.last - r.first + 1),
              prev_buf_.begin() + 2 + r.first);
  }
  for (int32_t t = t0; t < n_frames; ++t) compute_row(frames, t);

  // The best of the last frame's two end states.
  const row& end = rows_.back();
  auto value_at = [&](int32_t st) {
    return st >= end.first && st <= end.last ? values_[end.values + static_cast<std::size_t>(st - end.first)] : neg_inf;
  };
  int32_t s = n_states - 1;
  if (value_at(n_states - 2) > value_at(s)) s = n_states - 2;
  if (value_at(s) == neg_inf)
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
      const float lp = posterior_of(log_prob_of(frames.frame(t), a.token));
      if (lp > a.posterior) a.posterior = lp;
    }
    if (t == 0) break;
    // A state on the best path is finite, so within its row.
    const row& r = rows_[static_cast<std::size_t>(t)];
    const auto k = static_cast<std::size_t>(s - r.first);
    s -= (back_[r.back + k / 4] >> (2 * (k % 4))) & 3;
  }
  return out;
}

}  // namespace sluice::moe
