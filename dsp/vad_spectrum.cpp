#include "dsp/vad_spectrum.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "dsp/lane_sum.hpp"

namespace sluice::dsp {
namespace {

// Keeps logarithms finite on digital silence; far below any real noise floor.
constexpr double power_epsilon = 1e-10;
constexpr double db_per_decade = 10.0;

}  // namespace

result<vad_spectrum> vad_spectrum::create(double low_hz, double high_hz, double top_hz, int sample_rate) {
  if (sample_rate <= 0)
    return fail(errc::invalid_argument, "vad: sample rate " + std::to_string(sample_rate) + " Hz");
  const double nyquist = sample_rate / 2.0;
  if (!(low_hz >= 0.0 && low_hz < high_hz && high_hz <= nyquist && top_hz <= nyquist))
    return fail(errc::invalid_argument, "vad: bands " + std::to_string(low_hz) + " .. " +
                                            std::to_string(high_hz) + " .. " + std::to_string(top_hz) +
                                            " Hz must lie in 0 .. " + std::to_string(nyquist) + " Hz");
  const double bin_hz = static_cast<double>(sample_rate) / fft_size;
  const auto first = static_cast<std::size_t>(std::ceil(low_hz / bin_hz));
  const auto last = static_cast<std::size_t>(std::floor(high_hz / bin_hz));
  if (last < first)
    return fail(errc::invalid_argument, "vad: band " + std::to_string(low_hz) + " .. " +
                                            std::to_string(high_hz) + " Hz holds no FFT bin");
  const auto top = std::max(last, static_cast<std::size_t>(std::floor(top_hz / bin_hz)));
  auto fft = real_fft::create(fft_size);
  if (!fft) return tl::unexpected(fft.error());
  return vad_spectrum(std::move(*fft), first, last - first + 1, top - last);
}

vad_spectrum::vad_spectrum(real_fft fft, std::size_t first_bin, std::size_t speech_bins,
                           std::size_t high_bins)
    : fft_(std::move(fft)),
      first_bin_(first_bin),
      speech_bins_(speech_bins),
      hann_(window_samples),
      frame_(fft_size, 0.0),
      bins_(fft_size / 2 + 1),
      power_(speech_bins + high_bins) {
  // Periodic Hann: overlapping windows at a quarter of the length sum to a constant.
  double sum_squares = 0.0;
  for (int n = 0; n < window_samples; ++n) {
    hann_[n] = 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * n / window_samples);
    sum_squares += hann_[n] * hann_[n];
  }
  // Parseval: the one-sided bins of a windowed signal of power p sum to p * fft_size * sum(w^2) / 2.
  scale_ = 2.0 / (static_cast<double>(fft_size) * sum_squares);
}

void vad_spectrum::analyze(std::span<const float> window) {
  const std::size_t n = std::min<std::size_t>(window.size(), window_samples);
  for (std::size_t i = 0; i < n; ++i) frame_[i] = hann_[i] * window[i];
  std::fill(frame_.begin() + static_cast<std::ptrdiff_t>(n), frame_.end(), 0.0);
  fft_.forward(frame_, bins_);
  for (std::size_t k = 0; k < power_.size(); ++k)
    power_[k] = static_cast<float>(std::norm(bins_[first_bin_ + k]) * scale_);
}

float band_energy_db(std::span<const float> power) {
  // Four running sums (lane_sum): one chain of dependent additions was nine tenths of this
  // function's time; the order's rounding is far below what a threshold in dB can tell.
  const double sum = lane_sum(power);
  const double db = db_per_decade * std::log10(sum + power_epsilon);
  return std::max(energy_floor_db, static_cast<float>(db));
}

float whitened_flatness_db(std::span<const float> power, std::span<const float> noise_shape) {
  if (power.empty()) return 0.0f;
  // The sum of the logs as the log of the product, one log per frame instead of one per bin
  // (this was a fifth of the VAD's time). The product is renormalised every fourth bin (frexp
  // keeps its binary exponent apart), so it stays in [0.5, 1) times at most four ratios; a ratio
  // of finite floats over 1e-10 is within [1e-49, 1e49], so the product stays within
  // [1e-197, 1e196]: normal doubles, no overflow or underflow whatever the input. Scaling by a
  // power of two is exact on normal doubles, so this gives the same bits as renormalising at
  // every bin (as until 2026-12-04), at a quarter of the frexp calls.
  constexpr std::size_t bins_per_renormalise = 4;
  double product = 1.0;
  long exponent = 0;
  double sum = 0.0;
  int e = 0;
  for (std::size_t k = 0; k < power.size(); ++k) {
    const double ratio = (power[k] + power_epsilon) / (noise_shape[k] + power_epsilon);
    product *= ratio;
    sum += ratio;
    if ((k + 1) % bins_per_renormalise == 0 || k + 1 == power.size()) {
      product = std::frexp(product, &e);
      exponent += e;
    }
  }
  const double sum_log = std::log(product) + static_cast<double>(exponent) * std::numbers::ln2;
  const double count = static_cast<double>(power.size());
  const double log_geometric = sum_log / count;
  const double log_arithmetic = std::log(sum / count);
  const double db = db_per_decade * (log_geometric - log_arithmetic) / std::numbers::ln10;
  return static_cast<float>(std::min(0.0, db));
}

}  // namespace sluice::dsp
