#pragma once
/// Real-input FFT for power-of-two sizes, in double precision, on FFTW (Debian's libfftw3: the
/// library made for the job; it replaced our own radix-2 transform, which was a third of
/// `sluice transcribe`'s CPU time on one core).
///
/// A `real_fft` is a plan: made once (FFTW's planner, estimate mode, serialised: the planner is
/// not thread-safe) and read-only afterwards; executing it on new arrays is thread-safe, so one
/// plan can be shared by any number of streams and threads. Copies share the plan.
///
/// The plan uses FFTW's SIMD codelets, which need arrays at FFTW's SIMD alignment
/// (`fftw_alignment_of(p) == 0`: 16 bytes in Debian's build, which every std::vector<double>
/// from glibc's x86-64 malloc has). Until 2026-12-04 the plan was made FFTW_UNALIGNED (scalar
/// codelets, any array), 2.4x slower on a 512-point transform here and ~13% of a one-core
/// `sluice transcribe`. Misaligned arrays are copied through per-thread aligned scratch and run
/// by the same plan, so the result's bits never depend on where the caller's arrays lie.

#include <complex>
#include <cstddef>
#include <memory>
#include <span>

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
  /// Preconditions (asserted): in.size() == size(), out.size() == num_bins(). `in` is not
  /// written (an out-of-place real-to-complex FFTW plan preserves its input). Allocates nothing
  /// when both arrays are SIMD-aligned (see above); otherwise the calling thread's scratch is
  /// allocated once, at its first misaligned call for this size or a larger one.
  void forward(std::span<const double> in, std::span<std::complex<double>> out) const;

 private:
  struct plan;
  real_fft(std::size_t size, std::shared_ptr<const plan> p);

  std::size_t size_ = 0;
  std::shared_ptr<const plan> plan_;
};

}  // namespace sluice::dsp
