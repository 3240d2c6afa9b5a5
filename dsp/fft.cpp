#include "dsp/fft.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <mutex>
#include <new>
#include <string>

#include <fftw3.h>

namespace sluice::dsp {
namespace {

constexpr std::size_t min_size = 2;

// FFTW's planner (plan creation and destruction) is not thread-safe; executing a plan is.
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

// One thread's aligned arrays for running a plan on misaligned input or output. Plain aligned
// operator new, not fftw_malloc: FFTW documents only its execute functions as thread-safe, and
// 64-byte alignment satisfies any SIMD alignment FFTW asks (fftw_alignment_of is then 0).
struct aligned_scratch {
  static constexpr std::align_val_t alignment{64};
  double* in = nullptr;
  fftw_complex* out = nullptr;
  std::size_t size = 0;
  aligned_scratch() = default;
  aligned_scratch(const aligned_scratch&) = delete;
  aligned_scratch& operator=(const aligned_scratch&) = delete;
  ~aligned_scratch() { release(); }
  void release() {
    ::operator delete(in, alignment);
    ::operator delete(out, alignment);
    in = nullptr;
    out = nullptr;
    size = 0;
  }
  // Sizes only grow; operator new throws std::bad_alloc when memory runs out, as a vector would.
  void reserve(std::size_t n) {
    if (n <= size) return;
    release();
    in = static_cast<double*>(::operator new(n * sizeof(double), alignment));
    out = static_cast<fftw_complex*>(::operator new((n / 2 + 1) * sizeof(fftw_complex), alignment));
    size = n;
  }
};

}  // namespace

struct real_fft::plan {
  fftw_plan p = nullptr;
  ~plan() {
    std::lock_guard<std::mutex> lock(planner_mutex());
    fftw_destroy_plan(p);
  }
};

result<real_fft> real_fft::create(std::size_t size) {
  if (size < min_size || size > max_size || !std::has_single_bit(size)) {
    return fail(errc::invalid_argument, "fft: size " + std::to_string(size) +
                                            " is not a power of two in [" + std::to_string(min_size) +
                                            ", " + std::to_string(max_size) + "]");
  }
  // Planned on fftw_malloc'd scratch arrays (alignment_of 0) without FFTW_UNALIGNED, so FFTW may
  // choose SIMD codelets; forward() runs the plan only on arrays of the same alignment (FFTW's rule
  // for new-array execution). FFTW_ESTIMATE: no timing runs at start, and the same plan (so the
  // same bits) on every run.
  auto p = std::make_shared<plan>();
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    double* in = fftw_alloc_real(size);
    fftw_complex* out = fftw_alloc_complex(size / 2 + 1);
    if (in != nullptr && out != nullptr)
      p->p = fftw_plan_dft_r2c_1d(static_cast<int>(size), in, out, FFTW_ESTIMATE);
    fftw_free(in);
    fftw_free(out);
  }
  if (p->p == nullptr) return fail(errc::internal, "fft: FFTW made no plan for size " + std::to_string(size));
  return real_fft(size, std::move(p));
}

real_fft::real_fft(std::size_t size, std::shared_ptr<const plan> p) : size_(size), plan_(std::move(p)) {}

void real_fft::forward(std::span<const double> in, std::span<std::complex<double>> out) const {
  assert(in.size() == size_);
  assert(out.size() == num_bins());
  // std::complex<double> is layout-compatible with fftw_complex (double[2]); an out-of-place
  // r2c plan does not write its input, so the const_cast writes nothing.
  auto* in_ptr = const_cast<double*>(in.data());
  auto* out_ptr = reinterpret_cast<fftw_complex*>(out.data());
  if (fftw_alignment_of(in_ptr) == 0 && fftw_alignment_of(reinterpret_cast<double*>(out_ptr)) == 0) {
    fftw_execute_dft_r2c(plan_->p, in_ptr, out_ptr);
    return;
  }
  // Misaligned: the same plan on this thread's aligned scratch (same bits as the aligned path).
  thread_local aligned_scratch scratch;
  scratch.reserve(size_);
  std::copy(in.begin(), in.end(), scratch.in);
  fftw_execute_dft_r2c(plan_->p, scratch.in, scratch.out);
  const auto* bins = reinterpret_cast<const std::complex<double>*>(scratch.out);
  std::copy(bins, bins + num_bins(), out.begin());
}

}  // namespace sluice::dsp
