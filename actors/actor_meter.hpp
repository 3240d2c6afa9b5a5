#pragma once
/// Per-actor bookkeeping for the metrics actor: messages handled and time spent in handlers
/// since the last report, plus kind-specific counters, gauges and latency histograms.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/latency_histogram.hpp"
#include "actors/messages.hpp"

namespace sluice::actors {

class actor_meter {
 public:
  using clock = std::chrono::steady_clock;

  actor_meter() = default;
  actor_meter(std::string name, std::string kind) : name_(std::move(name)), kind_(std::move(kind)) {}

  /// Times one handler: construct at its start; the destructor adds the busy time.
  class scope {
   public:
    explicit scope(actor_meter& m) : m_(m), t0_(clock::now()) { ++m_.messages_; }
    ~scope() { m_.busy_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0_).count(); }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;

   private:
    actor_meter& m_;
    clock::time_point t0_;
  };

  void count(const std::string& key, double n = 1) {
    for (std::size_t i = 0; i < keys_.size(); ++i)
      if (keys_[i] == key) {
        counts_[i] += n;
        return;
      }
    keys_.push_back(key);
    counts_.push_back(n);
  }
  void gauge(const std::string& key, double v) {
    for (std::size_t i = 0; i < gauge_keys_.size(); ++i)
      if (gauge_keys_[i] == key) {
        gauges_[i] = v;
        return;
      }
    gauge_keys_.push_back(key);
    gauges_.push_back(v);
  }
  latency_histogram& histogram(std::string_view key) {
    for (std::size_t i = 0; i < hist_keys_.size(); ++i)
      if (hist_keys_[i] == key) return hists_[i];
    hist_keys_.emplace_back(key);
    hists_.emplace_back();
    return hists_.back();
  }

  /// The report since the last one (counters and histograms restart from zero).
  actor_report take(int64_t mailbox) {
    const auto now = clock::now();
    actor_report r;
    r.name = name_;
    r.kind = kind_;
    r.mailbox = mailbox;
    r.messages = messages_;
    r.busy_ns = busy_ns_;
    r.interval_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_).count();
    r.taken_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    r.keys = keys_;
    r.counts = counts_;
    r.gauge_keys = gauge_keys_;
    r.gauges = gauges_;
    for (std::size_t i = 0; i < hist_keys_.size(); ++i) {
      r.hist_keys.push_back(hist_keys_[i]);
      r.hists.push_back(hists_[i].counts());
      r.hist_sums.push_back(hists_[i].sum_ms());
      hists_[i].clear();
    }
    for (auto& c : counts_) c = 0;
    messages_ = busy_ns_ = 0;
    last_ = now;
    return r;
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_, kind_;
  int64_t messages_ = 0, busy_ns_ = 0;
  clock::time_point last_ = clock::now();
  std::vector<std::string> keys_;
  std::vector<double> counts_;
  std::vector<std::string> gauge_keys_;
  std::vector<double> gauges_;
  std::vector<std::string> hist_keys_;
  std::vector<latency_histogram> hists_;
};

/// Per (layer, expert) pair counts, i64 [n_layers, n_experts], as counters named
/// "pairs/<layer>/<expert>" (only the non-zero ones, so a report stays small): what expert
/// actors and lanes report and the dashboard's load heatmap and /metrics read.
inline void add_pair_counts(actor_meter& meter, const std::vector<int64_t>& pairs, int64_t n_experts) {
  for (std::size_t i = 0; i < pairs.size(); ++i)
    if (pairs[i] != 0)
      meter.count("pairs/" + std::to_string(static_cast<int64_t>(i) / n_experts) + "/" +
                      std::to_string(static_cast<int64_t>(i) % n_experts),
                  static_cast<double>(pairs[i]));
}

}  // namespace sluice::actors
