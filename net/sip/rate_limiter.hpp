#pragma once
/// A token bucket on bytes: `rate_bytes_per_s` tokens a second, at most `burst_bytes` saved up;
/// a datagram passes when the bucket holds its size (and takes it). One per RTP stream, so that
/// a peer (or anyone who finds the port) sending far more than its codec's bitrate has the excess
/// dropped before it is parsed, buffered, decoded and fed to the engine as audio. Not
/// thread-safe (the stream's strand owns it). A rate of 0 admits everything. The tokens can be
/// any unit: the switch calls' speed cap (net/switches/call_channels.hpp) counts microseconds of
/// audio with it.

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace sluice::net::sip {

class rate_limiter {
 public:
  rate_limiter() = default;
  rate_limiter(int64_t rate_bytes_per_s, int64_t burst_bytes)
      : rate_(rate_bytes_per_s), burst_(burst_bytes), tokens_(static_cast<double>(burst_bytes)) {}
  /// A limit of `kbps` kilobits a second (1000 bits), with one second of it as the burst, or
  /// `min_burst_bytes` if that is more (so that the largest packet a transport carries can pass).
  static rate_limiter kbps(int kbps, int64_t min_burst_bytes = 0) {
    const int64_t rate = int64_t{kbps} * 1000 / 8;
    return {rate, std::max(rate, min_burst_bytes)};
  }

  /// Whether `bytes` arriving at `now_us` (any monotonic clock) pass.
  bool admit(std::size_t bytes, int64_t now_us) {
    if (rate_ <= 0) return true;
    if (started_) {
      const double refill = static_cast<double>(std::max<int64_t>(0, now_us - last_us_)) * static_cast<double>(rate_) / 1e6;
      tokens_ = std::min(static_cast<double>(burst_), tokens_ + refill);
    }
    started_ = true;
    last_us_ = now_us;
    if (tokens_ < static_cast<double>(bytes)) return false;
    tokens_ -= static_cast<double>(bytes);
    return true;
  }

 private:
  int64_t rate_ = 0, burst_ = 0;
  double tokens_ = 0;
  int64_t last_us_ = 0;
  bool started_ = false;
};

}  // namespace sluice::net::sip
