#pragma once
/// Streaming sample-rate conversion of one channel with libsoxr.

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "dsp/audio.hpp"

struct soxr;  // libsoxr's handle; soxr.h stays out of our headers (it is linked PRIVATE)

namespace sluice::dsp {

/// libsoxr's quality recipes, named as in config [audio] resample_quality.
enum class resample_quality { quick, low, medium, high, very_high };

/// "quick" | "low" | "medium" | "high" | "very_high"; anything else is errc::invalid_config.
result<resample_quality> parse_resample_quality(std::string_view name);

/// Converts one channel from `input_rate()` to `output_rate()`, chunk by chunk.
///
/// The output is a function of the whole input only: feeding the same samples in any chunk sizes
/// gives bit-identical output (soxr runs single-threaded here and buffers internally). The
/// filter delays the signal, so output lags input until `flush()` drains it at end of stream;
/// after flush the total output is round(n_in * output_rate / input_rate) samples, give or take
/// one. Equal rates pass samples through untouched. Not thread-safe; one object per channel.
class resampler {
 public:
  /// Rates the engine accepts for input and output, Hz.
  static constexpr int min_rate = 4000;
  static constexpr int max_rate = 192000;

  /// errc::invalid_argument for a rate outside [min_rate, max_rate]; errc::internal if soxr fails.
  static result<resampler> create(int input_rate, int output_rate = model_sample_rate,
                                  resample_quality quality = resample_quality::high);

  int input_rate() const { return input_rate_; }    ///< Hz
  int output_rate() const { return output_rate_; }  ///< Hz

  /// Resamples `samples` (f32 [n] at input_rate) and returns what is ready (f32 at output_rate).
  /// errc::invalid_argument after flush() (call reset() first); errc::internal if soxr fails.
  result<std::vector<float>> process(std::span<const float> samples);

  /// Ends the stream and returns the samples still inside the filter.
  result<std::vector<float>> flush();

  /// A whole stream at once: process(samples) then flush(), written into `out` (replaced), which
  /// is sized once for the whole output. Same samples as process + flush. Only on a new or reset
  /// resampler (errc::invalid_argument otherwise); it is flushed afterwards.
  result<void> resample_all(std::span<const float> samples, std::vector<float>& out);

  /// Clears all state for a new stream at the same rates.
  void reset();

  std::size_t num_samples_in() const { return samples_in_; }    ///< input samples so far
  std::size_t num_samples_out() const { return samples_out_; }  ///< output samples so far

 private:
  struct soxr_deleter {
    void operator()(::soxr* s) const;
  };

  resampler(int input_rate, int output_rate, std::unique_ptr<::soxr, soxr_deleter> soxr);
  result<std::vector<float>> run(const float* in, std::size_t n);
  result<void> run_into(const float* in, std::size_t n, std::vector<float>& out);
  result<void> drain(const float* in, std::size_t n, std::vector<float>& out);
  std::size_t expected_output(std::size_t n) const;

  int input_rate_ = 0;
  int output_rate_ = 0;
  std::unique_ptr<::soxr, soxr_deleter> soxr_;  ///< null when the rates are equal (passthrough)
  bool flushed_ = false;
  std::size_t samples_in_ = 0;
  std::size_t samples_out_ = 0;
};

/// Resamples every channel of `in` to `output_rate` (a whole file). A file already at that rate
/// is returned as a copy. Errors as resampler::create.
result<audio> resample(const audio& in, int output_rate = model_sample_rate,
                       resample_quality quality = resample_quality::high);

}  // namespace sluice::dsp
