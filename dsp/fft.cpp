#include "dsp/fft.hpp"

#include <bit>
#include <cassert>
#include <cmath>
#include <numbers>
#include <string>

namespace sluice::dsp {
namespace {

constexpr std::size_t min_size = 2;

}  // namespace

result<real_fft> real_fft::create(std::size_t size) {
  if (size < min_size || size > max_size || !std::has_single_bit(size)) {
    return fail(errc::invalid_argument, "fft: size " + std::to_string(size) +
                                            " is not a power of two in [" + std::to_string(min_size) +
                                            ", " + std::to_string(max_size) + "]");
  }
  return real_fft(size);
}

real_fft::real_fft(std::size_t size) : size_(size) {
  const std::size_t half = size_ / 2;
  // Each twiddle comes straight from cos/sin rather than a recurrence, so the table is accurate
  // to the last bit whatever the size.
  twiddles_.resize(half);
  for (std::size_t k = 0; k < half; ++k) {
    const double angle = -2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(size_);
    twiddles_[k] = {std::cos(angle), std::sin(angle)};
  }
  bit_reverse_.resize(half);
  const int bits = std::countr_zero(half);
  for (std::size_t i = 0; i < half; ++i) {
    std::size_t r = 0;
    for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1u) << (bits - 1 - b);
    bit_reverse_[i] = r;
  }
}

void real_fft::complex_half(std::span<std::complex<double>> data) const {
  const std::size_t n = size_ / 2;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = bit_reverse_[i];
    if (i < j) std::swap(data[i], data[j]);
  }
  // Iterative radix-2 decimation in time. A butterfly span of `len` needs exp(-2 pi i j / len),
  // which is twiddles_[j * size_ / len] in the table made for the full real size.
  for (std::size_t len = 2; len <= n; len <<= 1) {
    const std::size_t half_len = len / 2;
    const std::size_t stride = size_ / len;
    for (std::size_t start = 0; start < n; start += len) {
      for (std::size_t j = 0; j < half_len; ++j) {
        const std::complex<double> t = twiddles_[j * stride] * data[start + j + half_len];
        const std::complex<double> u = data[start + j];
        data[start + j] = u + t;
        data[start + j + half_len] = u - t;
      }
    }
  }
}

void real_fft::forward(std::span<const double> in, std::span<std::complex<double>> out) const {
  assert(in.size() == size_);
  assert(out.size() == num_bins());
  const std::size_t m = size_ / 2;

  // Pack even samples as real parts and odd samples as imaginary parts: one complex FFT of half
  // the size then yields both half-size spectra, which are untangled below.
  for (std::size_t i = 0; i < m; ++i) out[i] = {in[2 * i], in[2 * i + 1]};
  complex_half(out.first(m));

  // With Z = FFT(z): E[k] = (Z[k] + conj Z[m-k]) / 2 is the spectrum of the even samples,
  // O[k] = (Z[k] - conj Z[m-k]) / 2i that of the odd ones, and X[k] = E[k] + w^k O[k].
  // X[m-k] = conj(E[k] - w^k O[k]), so each pass fills a pair and the work stays in place.
  const std::complex<double> z0 = out[0];
  out[0] = {z0.real() + z0.imag(), 0.0};
  out[m] = {z0.real() - z0.imag(), 0.0};
  const std::complex<double> minus_half_i{0.0, -0.5};
  for (std::size_t k = 1; k <= m / 2; ++k) {
    const std::complex<double> a = out[k];
    const std::complex<double> b = std::conj(out[m - k]);
    const std::complex<double> even = 0.5 * (a + b);
    const std::complex<double> odd_twiddled = twiddles_[k] * ((a - b) * minus_half_i);
    out[k] = even + odd_twiddled;
    out[m - k] = std::conj(even - odd_twiddled);
  }
}

}  // namespace sluice::dsp
