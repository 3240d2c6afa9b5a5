#pragma once
/// Splits interleaved two-channel audio into one byte vector per channel, across message
/// boundaries: a message may end inside a frame (the rest of that frame comes first in the
/// next one), so the bytes of an incomplete frame are carried over.

#include <cstdint>
#include <span>
#include <vector>

namespace sluice::net::switches {

class deinterleaver {
 public:
  /// `bytes_per_sample`: 2 for PCM16, 1 for G.711.
  explicit deinterleaver(int bytes_per_sample) : width_(static_cast<std::size_t>(bytes_per_sample)) {}
  /// The whole frames of `bytes` (after any carried bytes), channel 0 and channel 1.
  std::pair<std::vector<uint8_t>, std::vector<uint8_t>> split(std::span<const uint8_t> bytes);
  /// Bytes held back for the next message.
  std::size_t carried() const { return carry_.size(); }

 private:
  std::size_t width_;
  std::vector<uint8_t> carry_;
};

}  // namespace sluice::net::switches
