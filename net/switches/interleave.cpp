#include "net/switches/interleave.hpp"

namespace sluice::net::switches {

std::pair<std::vector<uint8_t>, std::vector<uint8_t>> deinterleaver::split(std::span<const uint8_t> bytes) {
  std::vector<uint8_t> all;
  all.reserve(carry_.size() + bytes.size());
  all.insert(all.end(), carry_.begin(), carry_.end());
  all.insert(all.end(), bytes.begin(), bytes.end());
  const std::size_t frame = 2 * width_;
  const std::size_t whole = all.size() / frame * frame;
  std::pair<std::vector<uint8_t>, std::vector<uint8_t>> out;
  out.first.reserve(whole / 2);
  out.second.reserve(whole / 2);
  for (std::size_t i = 0; i < whole; i += frame) {
    out.first.insert(out.first.end(), all.begin() + static_cast<std::ptrdiff_t>(i),
                     all.begin() + static_cast<std::ptrdiff_t>(i + width_));
    out.second.insert(out.second.end(), all.begin() + static_cast<std::ptrdiff_t>(i + width_),
                      all.begin() + static_cast<std::ptrdiff_t>(i + frame));
  }
  carry_.assign(all.begin() + static_cast<std::ptrdiff_t>(whole), all.end());
  return out;
}

}  // namespace sluice::net::switches
