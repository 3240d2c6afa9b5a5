#include "dsp/resampler.hpp"

#include <soxr.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>

namespace sluice::dsp {
namespace {

struct quality_name {
  std::string_view name;
  resample_quality quality;
  unsigned long recipe;  ///< soxr_quality_spec recipe
};

constexpr std::array<quality_name, 5> quality_names{{
    {"quick", resample_quality::quick, SOXR_QQ},
    {"low", resample_quality::low, SOXR_LQ},
    {"medium", resample_quality::medium, SOXR_MQ},
    {"high", resample_quality::high, SOXR_HQ},
    {"very_high", resample_quality::very_high, SOXR_VHQ},
}};

/// soxr may run its filters on OpenMP threads; dsp/ owns no threads (DESIGN.md), and one thread
/// also keeps the arithmetic order, and so the output, fixed.
constexpr unsigned soxr_threads = 1;
/// Extra room in each output buffer beyond the rate-scaled input length; soxr hands out what
/// it has, so this only saves a second call now and then.
constexpr std::size_t output_slack = 64;
/// Input samples handed to soxr per call: 0.5 s at 8 kHz, so its queues stay small.
constexpr std::size_t feed_block = 4096;

unsigned long recipe_of(resample_quality q) {
  for (const auto& entry : quality_names) {
    if (entry.quality == q) return entry.recipe;
  }
  return SOXR_HQ;
}

bool rate_ok(int rate) { return rate >= resampler::min_rate && rate <= resampler::max_rate; }

}  // namespace

result<resample_quality> parse_resample_quality(std::string_view name) {
  for (const auto& entry : quality_names) {
    if (entry.name == name) return entry.quality;
  }
  return fail(errc::invalid_config, "resampler: unknown quality '" + std::string(name) +
                                        "' (expected quick, low, medium, high or very_high)");
}

void resampler::soxr_deleter::operator()(::soxr* s) const { soxr_delete(s); }

resampler::resampler(int input_rate, int output_rate, std::unique_ptr<::soxr, soxr_deleter> soxr)
    : input_rate_(input_rate), output_rate_(output_rate), soxr_(std::move(soxr)) {}

result<resampler> resampler::create(int input_rate, int output_rate, resample_quality quality) {
  for (int rate : {input_rate, output_rate}) {
    if (!rate_ok(rate)) {
      return fail(errc::invalid_argument, "resampler: sample rate " + std::to_string(rate) +
                                              " Hz is outside [" + std::to_string(min_rate) + ", " +
                                              std::to_string(max_rate) + "]");
    }
  }
  if (input_rate == output_rate) return resampler(input_rate, output_rate, nullptr);

  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t q = soxr_quality_spec(recipe_of(quality), 0);
  const soxr_runtime_spec_t runtime = soxr_runtime_spec(soxr_threads);
  soxr_error_t err = nullptr;
  std::unique_ptr<::soxr, soxr_deleter> s(
      soxr_create(input_rate, output_rate, 1, &err, &io, &q, &runtime));
  if (err || !s) {
    return fail(errc::internal, "resampler: soxr_create(" + std::to_string(input_rate) + " -> " +
                                    std::to_string(output_rate) + "): " + soxr_strerror(err));
  }
  return resampler(input_rate, output_rate, std::move(s));
}

result<std::vector<float>> resampler::run(const float* in, std::size_t n) {
  std::vector<float> out;
  out.reserve(expected_output(n));
  if (auto ok = run_into(in, n, out); !ok) return tl::unexpected(ok.error());
  return out;
}

std::size_t resampler::expected_output(std::size_t n) const {
  const double ratio = static_cast<double>(output_rate_) / static_cast<double>(input_rate_);
  return static_cast<std::size_t>(std::ceil(static_cast<double>(n) * ratio)) + output_slack;
}

result<void> resampler::run_into(const float* in, std::size_t n, std::vector<float>& out) {
  // `in == nullptr` is soxr's end-of-input signal. soxr copies the input it is given into its
  // own queue, so a whole file at once grew that queue by reallocation to the file's size
  // (measured: resampling was 15% of a one-core `sluice transcribe`, most of it soxr's
  // realloc, memmove and first-touch page faults). The input goes in feed_block pieces instead,
  // each drained before the next, so soxr's buffers stay a few pages. The output is the same:
  // it is a function of the input samples only, however they are chunked (see the header).
  const std::size_t before = out.size();
  if (in == nullptr) {
    if (auto ok = drain(nullptr, 0, out); !ok) return ok;
  } else {
    for (std::size_t at = 0; at < n; at += feed_block) {
      if (auto ok = drain(in + at, std::min(feed_block, n - at), out); !ok) return ok;
    }
  }
  samples_out_ += out.size() - before;
  return {};
}

result<void> resampler::drain(const float* in, std::size_t n, std::vector<float>& out) {
  // Input is always taken whole (idone is not asked for, so soxr does not ration it by output
  // space); output is drained until soxr has nothing more.
  static constexpr float no_input = 0.0f;
  std::size_t want = expected_output(n);
  const float* next_in = in;
  std::size_t next_n = n;
  for (;;) {
    const std::size_t have = out.size();
    // Within the room already reserved when there is enough of it, so a buffer sized for the
    // whole output (resample_all) is never reallocated and copied near its end.
    if (const std::size_t room = out.capacity() - have; room >= output_slack && room < want) want = room;
    out.resize(have + want);
    std::size_t done = 0;
    soxr_error_t err = soxr_process(soxr_.get(), next_in, next_n, nullptr, out.data() + have, want, &done);
    out.resize(have + done);
    if (err) return fail(errc::internal, std::string("resampler: soxr_process: ") + err);
    if (done < want) return {};
    // Output buffer was full: ask again for what is left, with no new input (a non-null empty
    // input, since null would mean end of stream).
    if (in) next_in = &no_input;
    next_n = 0;
  }
}

result<std::vector<float>> resampler::process(std::span<const float> samples) {
  if (flushed_) return fail(errc::invalid_argument, "resampler: process() after flush(); reset() first");
  samples_in_ += samples.size();
  if (!soxr_) {
    samples_out_ += samples.size();
    return std::vector<float>(samples.begin(), samples.end());
  }
  if (samples.empty()) return std::vector<float>{};
  return run(samples.data(), samples.size());
}

result<void> resampler::resample_all(std::span<const float> samples, std::vector<float>& out) {
  if (flushed_ || samples_in_ != 0) return fail(errc::invalid_argument, "resampler: resample_all() on a used resampler; reset() first");
  samples_in_ = samples.size();
  flushed_ = true;
  if (!soxr_) {
    out.assign(samples.begin(), samples.end());
    samples_out_ = out.size();
    return {};
  }
  out.clear();
  out.reserve(expected_output(samples.size()) + output_slack);
  if (!samples.empty()) {
    if (auto ok = run_into(samples.data(), samples.size(), out); !ok) return ok;
  }
  return run_into(nullptr, 0, out);
}

result<std::vector<float>> resampler::flush() {
  if (flushed_ || !soxr_) {
    flushed_ = true;
    return std::vector<float>{};
  }
  flushed_ = true;
  return run(nullptr, 0);
}

void resampler::reset() {
  if (soxr_) soxr_clear(soxr_.get());
  flushed_ = false;
  samples_in_ = 0;
  samples_out_ = 0;
}

result<audio> resample(const audio& in, int output_rate, resample_quality quality) {
  audio out;
  out.sample_rate = output_rate;
  out.channels.reserve(in.num_channels());
  for (const auto& channel : in.channels) {
    auto r = resampler::create(in.sample_rate, output_rate, quality);
    if (!r) return tl::unexpected(r.error());
    // Body and tail straight into one buffer of the final size: no copy of the body.
    auto& body = out.channels.emplace_back();
    if (auto ok = r->resample_all(channel, body); !ok) return tl::unexpected(ok.error());
  }
  if (in.channels.empty()) {
    // Still validate the rates, so an empty file with a bad rate is not silently accepted.
    auto r = resampler::create(in.sample_rate, output_rate, quality);
    if (!r) return tl::unexpected(r.error());
  }
  return out;
}

}  // namespace sluice::dsp
