// The decoders' own fast-path pieces against independent references: flat_u64_map against
// std::unordered_map under random operations, align_labels (Viterbi over the reachable states)
// against an exhaustive search over every CTC path of small random cases, ctc_aligner (which
// keeps its rows between calls) against a fresh alignment at every call, and
// select_tokens (sorts only the tokens above the floor) against sorting every token.
#include <doctest/doctest.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <unordered_map>
#include <vector>

#include "moe/decoder/ctc_alignment.hpp"
#include "moe/decoder/ctc_frames.hpp"
#include "moe/decoder/flat_map.hpp"

using namespace sluice::moe;

TEST_CASE("decoder/flat_u64_map: random inserts, lookups and clears agree with std::unordered_map") {
  std::mt19937_64 rng(11);
  flat_u64_map<int32_t> m;
  std::unordered_map<uint64_t, int32_t> ref;
  // Keys from a small pool (many repeats), with the all-ones key, zero and keys equal in their
  // low or high 32 bits, as the decoders' (node << 32 | token) keys are.
  std::vector<uint64_t> pool = {~uint64_t{0}, 0, 1, uint64_t{1} << 32, (uint64_t{1} << 32) | 1, 0xffffffffull};
  for (int i = 0; i < 300; ++i) pool.push_back(rng() % 4 == 0 ? (rng() % 64) << 32 : rng());
  for (int round = 0; round < 6; ++round) {
    for (int op = 0; op < 4000; ++op) {
      const uint64_t k = pool[rng() % pool.size()];
      if (rng() % 2) {
        const auto v = static_cast<int32_t>(rng() % 1000);
        auto [p, inserted] = m.try_emplace(k, v);
        auto [it, ref_inserted] = ref.try_emplace(k, v);
        REQUIRE(inserted == ref_inserted);
        REQUIRE(*p == it->second);
      } else {
        const int32_t* p = m.find(k);
        auto it = ref.find(k);
        REQUIRE((p != nullptr) == (it != ref.end()));
        if (p) REQUIRE(*p == it->second);
      }
      REQUIRE(m.size() == ref.size());
    }
    std::unordered_map<uint64_t, int32_t> seen;
    m.for_each([&](uint64_t k, int32_t v) { CHECK(seen.emplace(k, v).second); });
    CHECK(seen == ref);
    const std::size_t bytes = m.memory_bytes();
    m.clear();
    ref.clear();
    CHECK(m.empty());
    CHECK(m.find(pool[0]) == nullptr);
    CHECK(m.find(pool[7]) == nullptr);
    CHECK(m.memory_bytes() == bytes);  // clear() keeps the table
  }
}

namespace {

// Every CTC path of n_frames frames that reads `labels` (blanks between equal neighbours), by
// brute force over all token sequences: the best total ln posterior, or -inf when none reads it.
double best_path_score(const frame_store& frames, const std::vector<int32_t>& labels, int32_t blank, int32_t vocab) {
  const int32_t n = frames.size();
  auto lp = [&](int32_t t, int32_t tok) {
    for (const auto& x : frames.frame(t))
      if (x.token == tok) return static_cast<double>(x.log_prob);
    return -std::numeric_limits<double>::infinity();
  };
  double best = -std::numeric_limits<double>::infinity();
  std::vector<int32_t> path(static_cast<std::size_t>(n));
  std::function<void(int32_t, double)> walk = [&](int32_t t, double score) {
    if (score == -std::numeric_limits<double>::infinity()) return;
    if (t == n) {
      std::vector<int32_t> read;  // CTC collapse: merge repeats, drop blanks
      for (int32_t i = 0; i < n; ++i)
        if (const int32_t tok = path[static_cast<std::size_t>(i)];
            tok != blank && (i == 0 || tok != path[static_cast<std::size_t>(i - 1)]))
          read.push_back(tok);
      if (read == labels) best = std::max(best, score);
      return;
    }
    for (int32_t tok = 0; tok < vocab; ++tok) {
      path[static_cast<std::size_t>(t)] = tok;
      walk(t + 1, score + lp(t, tok));
    }
  };
  walk(0, 0.0);
  return best;
}

// The score of the path an alignment describes: each token on [first_frame, last_frame], blank
// on every other frame.
double alignment_score(const frame_store& frames, const std::vector<aligned_token>& a, int32_t blank) {
  auto lp = [&](int32_t t, int32_t tok) {
    for (const auto& x : frames.frame(t))
      if (x.token == tok) return static_cast<double>(x.log_prob);
    return -std::numeric_limits<double>::infinity();
  };
  double s = 0;
  int32_t t = 0;
  for (const auto& tok : a) {
    for (; t < tok.first_frame; ++t) s += lp(t, blank);
    for (; t <= tok.last_frame; ++t) s += lp(t, tok.token);
  }
  for (; t < frames.size(); ++t) s += lp(t, blank);
  return s;
}

}  // namespace

TEST_CASE("decoder/align_labels: the path found is the best of every CTC path (exhaustive, small random cases)") {
  std::mt19937 rng(5);
  constexpr int32_t vocab = 3, blank = 0;
  int paths = 0, no_path = 0;
  for (int c = 0; c < 800; ++c) {
    const int32_t n_frames = 1 + static_cast<int32_t>(rng() % 7);
    // Pruned tokens are absent (-inf), as the decoders store frames: a quarter of them, or half
    // (peaky frames, where few states of a frame are reachable).
    const unsigned absent = c % 2 == 0 ? 4 : 2;
    frame_store frames;
    for (int32_t t = 0; t < n_frames; ++t) {
      std::vector<token_log_prob> f;
      for (int32_t tok = 0; tok < vocab; ++tok)
        if (rng() % absent != 0)
          f.push_back({tok, -static_cast<float>(rng() % 1000) / 100.0f});
      frames.append(f);
    }
    std::vector<int32_t> labels(1 + rng() % 4);
    for (auto& l : labels) l = 1 + static_cast<int32_t>(rng() % (vocab - 1));
    const double best = best_path_score(frames, labels, blank, vocab);
    auto a = align_labels(frames, labels, blank, vocab);
    if (best == -std::numeric_limits<double>::infinity()) {
      CHECK_FALSE(a.has_value());
      ++no_path;
      continue;
    }
    REQUIRE(a.has_value());
    REQUIRE(a->size() == labels.size());
    for (std::size_t i = 0; i < labels.size(); ++i) {
      CHECK((*a)[i].token == labels[i]);
      CHECK((*a)[i].first_frame <= (*a)[i].last_frame);
      if (i > 0) CHECK((*a)[i - 1].last_frame < (*a)[i].first_frame);
    }
    CHECK(alignment_score(frames, *a, blank) == doctest::Approx(best).epsilon(1e-9));
    ++paths;
  }
  // Both outcomes were exercised.
  CHECK(paths > 200);
  CHECK(no_path > 100);
  MESSAGE(paths << " cases with a path, " << no_path << " without");
}

TEST_CASE("decoder/align_labels: where the highest reachable state falls back, states above it read as unreachable") {
  // Frame 6 lists only token 1, so the paths that had reached label 3 die there and the highest
  // finite state falls back; the arrays still hold finite values above it from earlier frames,
  // which must not be read as reachable two frames later (found by a random comparison with
  // the recursion before it was narrowed to the reachable states).
  constexpr int32_t vocab = 5, blank = 0;
  const std::vector<std::vector<token_log_prob>> listed = {
      {{0, -5.5f}},
      {{1, 0.0f}},
      {{1, -0.0f}, {3, -5.0f}},
      {{1, -2.0f}, {3, -3.5f}, {4, -4.0f}},
      {{0, -3.5f}, {1, -3.0f}},
      {{0, -3.5f}, {1, -4.5f}},
      {{1, -1.5f}},
      {{0, -2.5f}, {2, -0.0f}, {3, -3.5f}},
      {{0, -2.5f}, {1, -2.0f}, {4, -2.0f}},
  };
  frame_store frames;
  for (const auto& f : listed) frames.append(f);
  const std::vector<int32_t> labels = {1, 3};
  const double best = best_path_score(frames, labels, blank, vocab);
  REQUIRE(best > -std::numeric_limits<double>::infinity());
  auto a = align_labels(frames, labels, blank, vocab);
  REQUIRE(a.has_value());
  CHECK(alignment_score(frames, *a, blank) == doctest::Approx(best).epsilon(1e-9));
}

TEST_CASE("decoder/align_labels: a blank alias stands in for blank where the frame holds it and not blank") {
  // Tokens: 0 blank, 1 'a', 2 'b', 3 the alias (the lexicon decoder's <space> between words).
  // Frame 2 holds only the alias (blank pruned away): "a b" has no CTC path through it unless
  // the alias counts as blank there, and then 'a' is frame 1, 'b' frame 3.
  constexpr int32_t vocab = 4, blank = 0, alias = 3;
  frame_store frames;
  const std::vector<std::vector<token_log_prob>> spec{
      {{0, -0.1f}}, {{1, -0.1f}, {0, -3.0f}}, {{3, -0.1f}}, {{2, -0.1f}, {0, -3.0f}}, {{0, -0.1f}, {3, -2.0f}}};
  for (const auto& f : spec) frames.append(f);
  const std::vector<int32_t> labels{1, 2};
  CHECK_FALSE(align_labels(frames, labels, blank, vocab).has_value());
  auto a = align_labels(frames, labels, blank, vocab, alias);
  REQUIRE(a.has_value());
  REQUIRE(a->size() == 2);
  CHECK((*a)[0].first_frame == 1);
  CHECK((*a)[0].last_frame == 1);
  CHECK((*a)[1].first_frame == 3);
  CHECK((*a)[1].last_frame == 3);
  // The alias is not a label, and must be a token.
  const std::vector<int32_t> with_alias{1, 3, 2};
  CHECK_FALSE(align_labels(frames, with_alias, blank, vocab, alias).has_value());
  CHECK_FALSE(align_labels(frames, labels, blank, vocab, vocab).has_value());
}

namespace {

// The textbook CTC Viterbi over every frame and every state (no pruning, no reuse), written
// here as an independent reference: ties keep the nearer state (stay, then one back, then two),
// the end state is the last label unless the blank after it is strictly better, and a token's
// confidence is its best posterior over the frames of its spike.
sluice::result<std::vector<aligned_token>> textbook_viterbi(const frame_store& frames, const std::vector<int32_t>& labels,
                                                            int32_t blank, int32_t alias) {
  const double ninf = -std::numeric_limits<double>::infinity();
  const int32_t n_states = 2 * static_cast<int32_t>(labels.size()) + 1, n_frames = frames.size();
  if (labels.empty()) return std::vector<aligned_token>{};
  if (n_frames == 0) return sluice::fail(sluice::errc::invalid_argument, "no frames");
  auto lp = [&](int32_t t, int32_t tok) {
    double v = ninf;
    for (const auto& x : frames.frame(t))
      if (x.token == tok || (tok == blank && x.token == alias && alias >= 0)) v = std::max(v, static_cast<double>(x.log_prob));
    return v;
  };
  auto token_of = [&](int32_t st) { return st % 2 == 0 ? blank : labels[static_cast<std::size_t>(st / 2)]; };
  std::vector<std::vector<double>> v(static_cast<std::size_t>(n_frames), std::vector<double>(static_cast<std::size_t>(n_states), ninf));
  std::vector<std::vector<int>> from(v.size(), std::vector<int>(static_cast<std::size_t>(n_states), 0));
  v[0][0] = lp(0, blank);
  v[0][1] = lp(0, token_of(1));
  for (int32_t t = 1; t < n_frames; ++t)
    for (int32_t st = 0; st < n_states; ++st) {
      const auto& pv = v[static_cast<std::size_t>(t) - 1];
      double best = pv[static_cast<std::size_t>(st)];
      int back = 0;
      if (st >= 1 && pv[static_cast<std::size_t>(st) - 1] > best) best = pv[static_cast<std::size_t>(st) - 1], back = 1;
      if (st >= 2 && st % 2 == 1 && token_of(st) != token_of(st - 2) && pv[static_cast<std::size_t>(st) - 2] > best)
        best = pv[static_cast<std::size_t>(st) - 2], back = 2;
      v[static_cast<std::size_t>(t)][static_cast<std::size_t>(st)] = best + lp(t, token_of(st));
      from[static_cast<std::size_t>(t)][static_cast<std::size_t>(st)] = back;
    }
  const auto& last = v.back();
  int32_t s = n_states - 1;
  if (last[static_cast<std::size_t>(n_states) - 2] > last[static_cast<std::size_t>(s)]) s = n_states - 2;
  if (last[static_cast<std::size_t>(s)] == ninf) return sluice::fail(sluice::errc::invalid_argument, "no path");
  std::vector<aligned_token> out(labels.size());
  for (auto& a : out) a.first_frame = -1;
  for (int32_t t = n_frames - 1; t >= 0; --t) {
    if (s % 2 == 1) {
      aligned_token& a = out[static_cast<std::size_t>(s / 2)];
      a.token = labels[static_cast<std::size_t>(s / 2)];
      if (a.first_frame < 0) a.last_frame = t;
      a.first_frame = t;
      float own = -std::numeric_limits<float>::infinity();
      for (const auto& x : frames.frame(t))
        if (x.token == a.token) own = x.log_prob;
      a.posterior = std::max(a.posterior, posterior_of(own));
    }
    if (t > 0) s -= from[static_cast<std::size_t>(t)][static_cast<std::size_t>(s)];
  }
  return out;
}

bool same_alignment(const sluice::result<std::vector<aligned_token>>& a, const sluice::result<std::vector<aligned_token>>& b) {
  return a.has_value() == b.has_value() && (!a || *a == *b);  // aligned_token's == compares every field
}

}  // namespace

TEST_CASE("decoder/ctc_aligner: one aligner over a growing utterance, its labels grown, changed and cut, answers as a fresh alignment and the textbook Viterbi do at every call") {
  // Frames come a few at a time, as a decoder's chunks; after each, the labels change the way a
  // decoder's best hypothesis does: mostly grown at the end, sometimes one of the last labels
  // changed or any label (another hypothesis wins), cut back, left as they were, or emptied. Tokens: 0 blank, 1..4 letters, 5 the alias.
  std::mt19937 rng(17);
  constexpr int32_t vocab = 6, blank = 0;
  int64_t calls = 0, with_path = 0, computed_fresh = 0, mismatches = 0;
  int64_t computed_reused = 0;
  for (int utterance = 0; utterance < 300; ++utterance) {
    const int32_t alias = utterance % 2 == 0 ? 5 : -1;
    ctc_aligner reused(blank, vocab, alias);
    frame_store frames;
    std::vector<int32_t> labels;
    const int32_t n_frames = 20 + static_cast<int32_t>(rng() % 100);
    // A spoken sequence the frames follow (spikes of its letters between blanks), so that the
    // labels near it have paths; other tokens listed at random.
    std::vector<int32_t> spoken;
    int32_t at = 0;
    while (static_cast<int32_t>(frames.size()) < n_frames) {
      const int32_t chunk = 1 + static_cast<int32_t>(rng() % 8);
      for (int32_t k = 0; k < chunk; ++k, ++at) {
        std::vector<token_log_prob> f;
        const bool spike = rng() % 3 == 0;
        if (spike) spoken.push_back(1 + static_cast<int32_t>(rng() % 4));
        if (spike) f.push_back({spoken.back(), -static_cast<float>(rng() % 50) / 100.0f});
        for (int32_t tok = 0; tok < vocab; ++tok) {
          if (spike && tok == spoken.back()) continue;
          // Blank listed in most frames (a long run of finite blank states), others rarely.
          if (rng() % (tok == blank ? 6 : 3) != 0 || (tok == blank && !spike))
            f.push_back({tok, -static_cast<float>(rng() % 800) / 100.0f});
        }
        // Coarse values: equally good paths are common, and ties must fall the same way.
        for (auto& x : f) x.log_prob = std::round(x.log_prob * 2.0f) / 2.0f;
        frames.append(f);
      }
      // Then 1-3 label edits.
      for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
        const unsigned what = rng() % 32;
        const auto n = static_cast<uint32_t>(labels.size());
        if (what < 18) {  // grow at the end, towards what was said
          labels.push_back(n < spoken.size() && rng() % 4 != 0 ? spoken[n] : 1 + static_cast<int32_t>(rng() % 4));
        } else if (what < 23 && n > 0) {  // change one of the last three labels
          labels[n - 1 - rng() % std::min(n, 3u)] = 1 + static_cast<int32_t>(rng() % 4);
        } else if (what < 25 && n > 0) {  // change any label
          labels[rng() % n] = 1 + static_cast<int32_t>(rng() % 4);
        } else if (what < 28 && n > 0) {  // cut back by 1-3
          labels.resize(n - std::min(n, 1 + static_cast<uint32_t>(rng() % 3)));
        } else if (what == 28 && rng() % 4 == 0) {
          labels.clear();
        }  // else: the same labels again
      }
      const int64_t before = reused.rows_computed();
      auto got = reused.align(frames, labels);
      computed_reused += reused.rows_computed() - before;
      ctc_aligner fresh(blank, vocab, alias);
      auto want = fresh.align(frames, labels);
      computed_fresh += fresh.rows_computed();
      ++calls;
      with_path += want.has_value() && !labels.empty();
      if (!same_alignment(got, want) || !same_alignment(want, textbook_viterbi(frames, labels, blank, alias))) {
        ++mismatches;
        MESSAGE("utterance " << utterance << ", " << frames.size() << " frames, " << labels.size() << " labels");
      }
    }
  }
  CHECK(mismatches == 0);
  // Both outcomes, and reuse: the reused aligner computed fewer rows.
  MESSAGE(calls << " calls, " << with_path << " with a path; rows computed: " << computed_reused << " reused, "
                << computed_fresh << " fresh");
  CHECK(with_path > calls / 4);
  CHECK(calls - with_path > calls / 10);
  CHECK(computed_reused < computed_fresh);
}

TEST_CASE("decoder/ctc_aligner: the same labels over new frames compute only the new rows, a new utterance all of its own") {
  constexpr int32_t vocab = 3, blank = 0;
  frame_store frames;
  const std::vector<std::vector<token_log_prob>> spec{
      {{0, -0.1f}}, {{1, -0.1f}, {0, -3.0f}}, {{0, -0.2f}, {1, -2.0f}}, {{2, -0.1f}, {0, -3.0f}},
      {{0, -0.1f}}, {{0, -0.1f}, {2, -1.0f}}};
  ctc_aligner a(blank, vocab);
  const std::vector<int32_t> labels{1, 2};
  for (std::size_t i = 0; i < 4; ++i) frames.append(spec[i]);
  REQUIRE(a.align(frames, labels).has_value());
  CHECK(a.rows_computed() == 4);
  // Asked again: nothing to compute.
  REQUIRE(a.align(frames, labels).has_value());
  CHECK(a.rows_computed() == 4);
  frames.append(spec[4]);
  frames.append(spec[5]);
  auto r = a.align(frames, labels);
  REQUIRE(r.has_value());
  CHECK(a.rows_computed() == 6);
  CHECK((*r)[0].first_frame == 1);
  CHECK((*r)[1].first_frame == 3);
  // An empty store is another utterance: every row of it is computed.
  a.reset();
  frame_store next;
  next.append(spec[1]);
  next.append(spec[4]);
  REQUIRE(a.align(next, std::vector<int32_t>{1}).has_value());
  CHECK(a.rows_computed() == 8);
  // Fewer frames than the last call's without a reset: taken as another utterance too.
  frame_store shorter;
  shorter.append(spec[1]);
  auto s = a.align(shorter, std::vector<int32_t>{1});
  REQUIRE(s.has_value());
  CHECK((*s)[0].first_frame == 0);
  CHECK(a.rows_computed() == 9);
}

TEST_CASE("decoder/ctc_aligner: labels grown at their end recompute from the kept row before the old last label's first reachable frame") {
  // 40 frames: blank alone, but for token 1 listed from frame 30 on and token 2 from frame 35.
  // Labels {1}, then {1, 2}: state 1 (the old last label) is first reachable at frame 30, so
  // rows up to 30 hold the same states for both; the kept values before row 31 are row 15's
  // (every 16th row keeps them), so the second call computes rows 16-39: 24 rows, not 40.
  constexpr int32_t vocab = 3, blank = 0, n = 40;
  frame_store frames;
  for (int32_t t = 0; t < n; ++t) {
    std::vector<token_log_prob> f{{blank, -0.5f}};
    if (t >= 30) f.push_back({1, -1.0f});
    if (t >= 35) f.push_back({2, -1.0f});
    frames.append(f);
  }
  ctc_aligner a(blank, vocab);
  REQUIRE(a.align(frames, std::vector<int32_t>{1}).has_value());
  CHECK(a.rows_computed() == n);
  auto r = a.align(frames, std::vector<int32_t>{1, 2});
  REQUIRE(r.has_value());
  CHECK(a.rows_computed() == n + 24);
  CHECK(same_alignment(r, textbook_viterbi(frames, {1, 2}, blank, -1)));
  // A label changed at the start: everything again.
  REQUIRE(a.align(frames, std::vector<int32_t>{2, 2}).has_value());
  CHECK(a.rows_computed() == n + 24 + n);
}

TEST_CASE("decoder/select_tokens: the same list as sorting every token best first (ties: lower id) and cutting at the floor, the best kept") {
  std::mt19937 rng(5);
  int64_t cases = 0, best_below_floor = 0, capped = 0;
  std::vector<token_log_prob> got;
  for (int round = 0; round < 4000; ++round) {
    const std::size_t vocab = 1 + rng() % 40;
    // Values on a coarse grid, so ties are common; some frames lie wholly below the floor.
    const float shift = (rng() % 4 == 0) ? -20.0f : 0.0f;
    std::vector<float> lp(vocab);
    for (float& x : lp) x = shift - static_cast<float>(rng() % 30) * 0.5f;
    const auto max_tokens = static_cast<int32_t>(rng() % 10);  // 0 is read as 1
    const float floor = -static_cast<float>(rng() % 16);
    std::vector<token_log_prob> all;
    for (std::size_t i = 0; i < vocab; ++i) all.push_back({static_cast<int32_t>(i), lp[i]});
    std::sort(all.begin(), all.end(), [](const token_log_prob& a, const token_log_prob& b) {
      return a.log_prob != b.log_prob ? a.log_prob > b.log_prob : a.token < b.token;
    });
    std::vector<token_log_prob> want = {all[0]};
    for (std::size_t i = 1; i < all.size() && want.size() < static_cast<std::size_t>(std::max(max_tokens, 1)); ++i)
      if (all[i].log_prob >= floor) want.push_back(all[i]);
    select_tokens(lp, max_tokens, floor, got);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      CHECK(got[i].token == want[i].token);
      CHECK(got[i].log_prob == want[i].log_prob);
    }
    ++cases;
    best_below_floor += all[0].log_prob < floor;
    capped += std::count_if(all.begin(), all.end(), [&](const token_log_prob& t) { return t.log_prob >= floor; }) >
              std::max(max_tokens, 1);
  }
  CHECK(best_below_floor > 100);  // the cases the rule is about did occur
  CHECK(capped > 100);
  MESSAGE(cases << " frames, " << best_below_floor << " with every token below the floor, " << capped << " capped");
}
