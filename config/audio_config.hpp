#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [audio]: how incoming audio is brought to the model's input (16 kHz mono float).
struct audio_config {
  /// libsoxr quality recipe used by dsp::resampler.
  std::string resample_quality = "high";
  /// Run speexdsp noise suppression on each channel (off by default: it can hurt clean audio).
  bool denoise = false;
  /// Maximum attenuation of noise in dB (speexdsp SPEEX_PREPROCESS_SET_NOISE_SUPPRESS), negative.
  int denoise_suppress_db = -25;

  template <class V>
  void visit(V&& v) {
    v("resample_quality", resample_quality, one_of{{"quick", "low", "medium", "high", "very_high"}},
      "libsoxr quality recipe for resampling to 16 kHz");
    v("denoise", denoise, any_bool{}, "speexdsp noise suppression per channel");
    v("denoise_suppress_db", denoise_suppress_db, range{-60, -3},
      "maximum noise attenuation in dB (negative)");
  }
  std::string check() const { return {}; }
};

}  // namespace sluice::config
