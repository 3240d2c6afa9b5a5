#include "dsp/denoiser.hpp"

#include <speex/speex_preprocess.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace sluice::dsp {
namespace {

constexpr float pcm16_scale = 32768.0f;
constexpr float pcm16_max = 32767.0f;
constexpr float pcm16_min = -32768.0f;
/// speexdsp's analysis window overlaps the previous frame by a whole frame, so each call returns
/// the previous frame's samples: a fixed delay of one frame (measured, and checked by the test).
constexpr std::size_t speex_delay_samples = denoiser::frame_samples;

int16_t to_pcm16(float x) {
  return static_cast<int16_t>(std::clamp(std::nearbyint(x * pcm16_scale), pcm16_min, pcm16_max));
}

}  // namespace

void denoiser::state_deleter::operator()(SpeexPreprocessState_* s) const {
  speex_preprocess_state_destroy(s);
}

result<denoiser::state_ptr> denoiser::make_state(int suppress_db) {
  state_ptr st(speex_preprocess_state_init(static_cast<int>(frame_samples), sample_rate));
  if (!st) return fail(errc::internal, "denoiser: speex_preprocess_state_init failed");
  // VAD is left at its default (off): setting it only prints a deprecation warning.
  int on = 1;
  int off = 0;
  int db = suppress_db;
  if (speex_preprocess_ctl(st.get(), SPEEX_PREPROCESS_SET_DENOISE, &on) != 0 ||
      speex_preprocess_ctl(st.get(), SPEEX_PREPROCESS_SET_AGC, &off) != 0 ||
      speex_preprocess_ctl(st.get(), SPEEX_PREPROCESS_SET_DEREVERB, &off) != 0 ||
      speex_preprocess_ctl(st.get(), SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &db) != 0) {
    return fail(errc::internal, "denoiser: speex_preprocess_ctl rejected a setting");
  }
  return st;
}

denoiser::denoiser(int suppress_db, state_ptr state)
    : suppress_db_(suppress_db),
      state_(std::move(state)),
      frame_(frame_samples),
      delay_left_(speex_delay_samples) {
  pending_.reserve(frame_samples);
}

result<denoiser> denoiser::create(int suppress_db) {
  if (suppress_db < min_suppress_db || suppress_db > max_suppress_db) {
    return fail(errc::invalid_argument, "denoiser: suppress_db " + std::to_string(suppress_db) +
                                            " is outside [" + std::to_string(min_suppress_db) +
                                            ", " + std::to_string(max_suppress_db) + "]");
  }
  auto st = make_state(suppress_db);
  if (!st) return tl::unexpected(st.error());
  return denoiser(suppress_db, std::move(*st));
}

void denoiser::run_frame(std::span<const float> in, std::vector<float>& out) {
  for (std::size_t i = 0; i < frame_samples; ++i) frame_[i] = to_pcm16(in[i]);
  speex_preprocess_run(state_.get(), frame_.data());
  const std::size_t skip = std::min(delay_left_, frame_samples);
  delay_left_ -= skip;
  for (std::size_t i = skip; i < frame_samples; ++i) out.push_back(static_cast<float>(frame_[i]) / pcm16_scale);
}

result<std::vector<float>> denoiser::process(std::span<const float> samples) {
  if (flushed_) return fail(errc::invalid_argument, "denoiser: process() after flush(); reset() first");
  samples_in_ += samples.size();
  std::vector<float> out;
  out.reserve((pending_.size() + samples.size()) / frame_samples * frame_samples);
  // Top up a partial frame first, then run whole frames straight from the caller's span.
  if (!pending_.empty()) {
    const std::size_t take = std::min(frame_samples - pending_.size(), samples.size());
    pending_.insert(pending_.end(), samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(take));
    samples = samples.subspan(take);
    if (pending_.size() < frame_samples) return out;
    run_frame(pending_, out);
    pending_.clear();
  }
  while (samples.size() >= frame_samples) {
    run_frame(samples.first(frame_samples), out);
    samples = samples.subspan(frame_samples);
  }
  pending_.assign(samples.begin(), samples.end());
  samples_out_ += out.size();
  return out;
}

result<std::vector<float>> denoiser::flush() {
  std::vector<float> out;
  if (flushed_) return out;
  flushed_ = true;
  // Pad the last partial frame with silence, then push silence through until the delayed
  // tail of the real input has come out; whatever the padding produced is cut off.
  const std::vector<float> silence(frame_samples, 0.0f);
  if (!pending_.empty()) {
    pending_.resize(frame_samples, 0.0f);
    run_frame(pending_, out);
    pending_.clear();
  }
  while (samples_out_ + out.size() < samples_in_) run_frame(silence, out);
  out.resize(samples_in_ - samples_out_);
  samples_out_ += out.size();
  return out;
}

result<void> denoiser::reset() {
  // speexdsp has no reset call: a fresh state forgets the noise profile.
  auto st = make_state(suppress_db_);
  if (!st) return tl::unexpected(st.error());
  state_ = std::move(*st);
  pending_.clear();
  delay_left_ = speex_delay_samples;
  flushed_ = false;
  samples_in_ = 0;
  samples_out_ = 0;
  return {};
}

}  // namespace sluice::dsp
