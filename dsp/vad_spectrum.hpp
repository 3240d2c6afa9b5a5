#pragma once
/// The spectral measurements the VAD makes on one analysis window: the power spectrum of the
/// speech band (and of a high band above it, where fricatives live), a band's total energy, and
/// the flatness of a spectrum once the noise's own shape is divided out. Stateless apart from
/// scratch buffers; one object per stream.

#include <complex>
#include <cstddef>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "dsp/fft.hpp"

namespace sluice::dsp {

class vad_spectrum {
 public:
  /// Analysis window: 25 ms at 16 kHz (samples), Hann-weighted.
  static constexpr int window_samples = 400;
  /// Transform size (samples); the window is zero-padded to it. Bins are 31.25 Hz apart.
  static constexpr int fft_size = 512;

  /// The speech band [low_hz, high_hz] and the high band (high_hz, top_hz] at `sample_rate` Hz;
  /// top_hz <= high_hz leaves the high band empty. errc::invalid_argument when the speech band
  /// holds no bin or a band reaches past Nyquist.
  static result<vad_spectrum> create(double low_hz, double high_hz, double top_hz, int sample_rate);

  /// Transforms `window` (window_samples samples, [-1, 1]); speech_band() and high_band() then
  /// hold its power per bin, scaled so the bins of a signal sum to its mean power in the band
  /// (a full-scale sine in the band sums to 0.5). Valid until the next call.
  void analyze(std::span<const float> window);

  std::span<const float> speech_band() const { return std::span<const float>(power_).first(speech_bins_); }
  std::span<const float> high_band() const { return std::span<const float>(power_).subspan(speech_bins_); }
  std::size_t speech_bins() const { return speech_bins_; }

 private:
  vad_spectrum(real_fft fft, std::size_t first_bin, std::size_t speech_bins, std::size_t high_bins);

  real_fft fft_;
  std::size_t first_bin_ = 0;
  std::size_t speech_bins_ = 0;
  double scale_ = 0.0;                        ///< one-sided power normalisation
  std::vector<double> hann_;                  ///< f64 [window_samples]
  std::vector<double> frame_;                 ///< f64 [fft_size], zero-padded windowed input
  std::vector<std::complex<double>> bins_;    ///< c128 [fft_size / 2 + 1]
  std::vector<float> power_;                  ///< f32 [speech bins + high bins]
};

/// Total band power in dB re full scale (a full-scale sine in the band is -3 dB). Silence is
/// clamped to `energy_floor_db` so the result is always finite.
float band_energy_db(std::span<const float> power);

/// Lowest value band_energy_db returns (dB).
inline constexpr float energy_floor_db = -100.0f;

/// Spectral flatness in dB (<= 0) of power[k] / noise_shape[k]: geometric over arithmetic mean.
/// Noise shaped like `noise_shape` gives about -2.5 dB whatever its colour; the harmonics of
/// voiced speech give much lower values. Both spans have the same length; noise_shape > 0.
float whitened_flatness_db(std::span<const float> power, std::span<const float> noise_shape);

}  // namespace sluice::dsp
