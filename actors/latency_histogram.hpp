#pragma once
/// Latencies in fixed buckets (ms), so that channels can report counts and the metrics actor
/// can add them up and read percentiles without keeping samples.

#include <array>
#include <cstdint>
#include <vector>

namespace sluice::actors {

class latency_histogram {
 public:
  /// Upper bounds of the buckets (ms); the last bucket takes everything above the last bound.
  static constexpr std::array<double, 20> bounds_ms = {1,   2,   5,   10,  20,  50,   100,  150,  200,  300,
                                                       400, 500, 600, 800, 1000, 1500, 2000, 3000, 5000, 10000};
  static constexpr std::size_t n_buckets = bounds_ms.size() + 1;

  latency_histogram() : counts_(n_buckets, 0) {}

  void add(double ms) {
    std::size_t b = 0;
    while (b < bounds_ms.size() && ms > bounds_ms[b]) ++b;
    ++counts_[b];
    ++total_;
    sum_ms_ += ms;
  }
  /// Adds another histogram's bucket counts and sum (ignored when the size differs).
  void merge(const std::vector<int64_t>& counts, double sum_ms) {
    if (counts.size() != n_buckets) return;
    sum_ms_ += sum_ms;
    for (std::size_t b = 0; b < n_buckets; ++b) {
      counts_[b] += counts[b];
      total_ += counts[b];
    }
  }
  /// Upper bound of the bucket holding the p-quantile (0 < p <= 1); 0 when empty. The open
  /// last bucket reports twice the last bound.
  double quantile_ms(double p) const {
    if (total_ == 0) return 0;
    const auto rank = static_cast<int64_t>(p * static_cast<double>(total_) + 0.999999);
    int64_t seen = 0;
    for (std::size_t b = 0; b < n_buckets; ++b) {
      seen += counts_[b];
      if (seen >= rank) return b < bounds_ms.size() ? bounds_ms[b] : 2 * bounds_ms.back();
    }
    return 2 * bounds_ms.back();
  }
  int64_t total() const { return total_; }
  double sum_ms() const { return sum_ms_; }
  const std::vector<int64_t>& counts() const { return counts_; }
  void clear() {
    counts_.assign(n_buckets, 0);
    total_ = 0;
    sum_ms_ = 0;
  }

 private:
  std::vector<int64_t> counts_;
  int64_t total_ = 0;
  double sum_ms_ = 0;
};

}  // namespace sluice::actors
