#pragma once
/// Decoded audio as the front end passes it around.

#include <cstddef>
#include <string>
#include <vector>

namespace sluice::dsp {

/// The model's input rate; everything is resampled to it.
inline constexpr int model_sample_rate = 16000;

/// Planar float audio: one vector per channel, samples in [-1, 1], all channels equally long.
/// Channels are never mixed: a stereo call is agent and customer, each transcribed alone.
struct audio {
  int sample_rate = 0;                       ///< Hz
  std::vector<std::vector<float>> channels;  ///< f32 [n_channels][n_samples]

  std::size_t num_channels() const { return channels.size(); }
  std::size_t num_samples() const { return channels.empty() ? 0 : channels[0].size(); }
  double duration_s() const {
    return sample_rate > 0 ? static_cast<double>(num_samples()) / sample_rate : 0.0;
  }
};

}  // namespace sluice::dsp
