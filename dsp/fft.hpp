#pragma once
/// Real-input FFT for power-of-two sizes, in double precision.
///
/// A `real_fft` is a plan: it precomputes twiddle factors and the bit-reversal permutation once
/// and is read-only afterwards, so one plan can be shared by any number of streams and threads.

#include <complex>
#include <cstddef>
#include <span>
#include <vector>

#include "config/error.hpp"

namespace sluice::dsp {

class real_fft {
 public:
  /// Largest size a plan may be made for (samples); bounds memory for a bad config.
  static constexpr std::size_t max_size = std::size_t{1} << 20;

  /// Makes a plan for `size` real samples. `size` must be a power of two in [2, max_size];
  /// anything else is errc::invalid_argument.
  static result<real_fft> create(std::size_t size);

  /// Number of real input samples.
  std::size_t size() const { return size_; }
  /// Number of complex output bins: size() / 2 + 1 (DC .. Nyquist).
  std::size_t num_bins() const { return size_ / 2 + 1; }

  /// Forward transform without normalisation: out[k] = sum_n in[n] * exp(-2 pi i k n / size).
  /// Preconditions (asserted): in.size() == size(), out.size() == num_bins().
  /// Allocates nothing; `out` doubles as the work buffer.
  void forward(std::span<const double> in, std::span<std::complex<double>> out) const;

 private:
  explicit real_fft(std::size_t size);

  /// In-place complex FFT of length size_/2 over data[0, size_/2).
  void complex_half(std::span<std::complex<double>> data) const;

  std::size_t size_ = 0;
  std::vector<std::complex<double>> twiddles_;  ///< exp(-2 pi i k / size_), k in [0, size_/2)
  std::vector<std::size_t> bit_reverse_;        ///< permutation for the size_/2 complex FFT
};

}  // namespace sluice::dsp
