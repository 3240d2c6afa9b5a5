#pragma once
/// Latencies in fixed buckets (ms), so that channels can report counts and the metrics actor
/// can add them up and read percentiles without keeping samples.

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::actors {

/// The engine's latency histograms, by the kind of actor that observes them. The metrics actor
/// exports each one from its first snapshot on, with zero counts before any observation (as
/// Prometheus expects of a histogram), so a scrape's families do not depend on what ran yet.
namespace latency_key {
inline constexpr std::string_view partial = "partial_latency_ms";  ///< channel: audio to partial
inline constexpr std::string_view final_result = "final_latency_ms";  ///< channel: live utterance end to final
inline constexpr std::string_view queue_wait = "queue_wait_ms";  ///< batcher/lane: ready audio to its step
inline constexpr std::string_view step = "step_ms";  ///< batcher/lane: one micro-batch step
}  // namespace latency_key
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 4> engine_latencies = {{
    {"channel", latency_key::partial},
    {"channel", latency_key::final_result},
    {"batcher", latency_key::queue_wait},
    {"batcher", latency_key::step},
}};

class latency_histogram {
 public:
  /// Upper bounds of the buckets (ms); the last bucket takes everything above the last bound.
  /// 5-10 ms apart from 10 to 50 ms: queue waits and steps live in the batching window (20-50
  /// ms), and a wait of 20 ms must be told from one of 30, 40 or 50.
  static constexpr std::array<double, 25> bounds_ms = {1,   2,   5,   10,  15,  20,   25,   30,   40,
                                                       50,  75,  100, 150, 200, 300,  400,  500,  600,
                                                       800, 1000, 1500, 2000, 3000, 5000, 10000};
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
