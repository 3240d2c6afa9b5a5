#include "dsp/fft.hpp"

#include <bit>
#include <cassert>
#include <mutex>
#include <string>
#include <vector>

#include <fftw3.h>

namespace sluice::dsp {
namespace {

constexpr std::size_t min_size = 2;

// FFTW's planner (plan creation and destruction) is not thread-safe; executing a plan is.
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

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
  // Planned on scratch arrays; FFTW_UNALIGNED: forward() runs it on any caller's arrays (new-array
  // execution otherwise needs the planning arrays' alignment). FFTW_ESTIMATE: no timing runs at
  // start, and the same plan (so the same bits) on every run.
  std::vector<double> in(size);
  std::vector<std::complex<double>> out(size / 2 + 1);
  auto p = std::make_shared<plan>();
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    p->p = fftw_plan_dft_r2c_1d(static_cast<int>(size), in.data(), reinterpret_cast<fftw_complex*>(out.data()),
                                FFTW_ESTIMATE | FFTW_UNALIGNED);
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
  fftw_execute_dft_r2c(plan_->p, const_cast<double*>(in.data()), reinterpret_cast<fftw_complex*>(out.data()));
}

}  // namespace sluice::dsp
