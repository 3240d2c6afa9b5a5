#pragma once
/// The pruning step the beam decoders share: which of a frame's candidate hypotheses survive.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

namespace sluice::moe {

/// A candidate's total and index, as keep_best_scored sorts them.
using ranked_candidates = std::vector<std::pair<double, std::size_t>>;

/// Leaves in `order` the indices of the best `beam` candidates by their total in `scores` (ties:
/// the earlier index, so the choice depends only on the beams and the frame, not on chunking)
/// whose total is within `threshold` of the best, best first. A -inf total is never kept while
/// another is finite. `at_least`: the caller knows that at least `beam` totals are >= it, so
/// none below it can be kept and they need not be sorted (it changes nothing else). `ranked`:
/// scratch, kept by the caller to reuse its memory.
inline void keep_best_scored(const std::vector<double>& scores, int beam, double threshold,
                             std::vector<std::size_t>& order, ranked_candidates& ranked,
                             double at_least = -std::numeric_limits<double>::infinity()) {
  double best = -std::numeric_limits<double>::infinity();
  for (double x : scores) best = std::max(best, x);
  const double floor = std::max(best - threshold, at_least);
  // Sorted as (total, index) pairs side by side rather than indices into `scores`: the same
  // order, without a load from `scores` in every comparison.
  ranked.clear();
  for (std::size_t i = 0; i < scores.size(); ++i)
    if (scores[i] >= floor) ranked.emplace_back(scores[i], i);
  auto better = [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; };
  const std::size_t keep = std::min(ranked.size(), static_cast<std::size_t>(beam));
  const auto cut = ranked.begin() + static_cast<std::ptrdiff_t>(keep);
  if (keep < ranked.size()) std::nth_element(ranked.begin(), cut, ranked.end(), better);
  std::sort(ranked.begin(), cut, better);
  order.resize(keep);
  for (std::size_t i = 0; i < keep; ++i) order[i] = ranked[i].second;
}

/// keep_best_scored on H::total() of each of `cands`: each total (a log-add) is computed once
/// into `scores` rather than in every comparison of the sort.
template <class H>
void keep_best(const std::vector<H>& cands, int beam, double threshold, std::vector<double>& scores,
               std::vector<std::size_t>& order, ranked_candidates& ranked) {
  scores.resize(cands.size());
  for (std::size_t i = 0; i < cands.size(); ++i) scores[i] = cands[i].total();
  keep_best_scored(scores, beam, threshold, order, ranked);
}

}  // namespace sluice::moe
