#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [fbank]: Kaldi-compatible log-mel filterbank (torchaudio.compliance.kaldi.fbank, dither 0).
/// A model's model.json carries its own values; these are the defaults and the CLI's.
struct fbank_config {
  int num_mel_bins = 80;
  double frame_length_ms = 25.0;
  double frame_shift_ms = 10.0;
  double low_freq_hz = 20.0;
  /// <= 0 means offset from Nyquist, as in Kaldi (0 = Nyquist).
  double high_freq_hz = 0.0;
  double preemphasis = 0.97;

  template <class V>
  void visit(V&& v) {
    v("num_mel_bins", num_mel_bins, range{10, 256}, "mel filters per frame");
    v("frame_length_ms", frame_length_ms, range{5, 100}, "analysis window length");
    v("frame_shift_ms", frame_shift_ms, range{1, 50}, "hop between frames");
    v("low_freq_hz", low_freq_hz, range{0, 8000}, "lowest mel filter edge");
    v("high_freq_hz", high_freq_hz, range{-8000, 8000},
      "highest mel filter edge; <= 0 is an offset from Nyquist");
    v("preemphasis", preemphasis, range{0, 1}, "pre-emphasis coefficient");
  }
  std::string check() const {
    if (frame_shift_ms > frame_length_ms) return "frame_shift_ms must not exceed frame_length_ms";
    return {};
  }
};

}  // namespace sluice::config
