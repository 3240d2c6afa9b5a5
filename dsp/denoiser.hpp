#pragma once
/// Streaming noise suppression for one 16 kHz channel with speexdsp's preprocessor.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "dsp/audio.hpp"

struct SpeexPreprocessState_;  // speexdsp's handle; its header stays out of ours (linked PRIVATE)

namespace sluice::dsp {

/// Suppresses stationary noise in 10 ms frames (speexdsp's spectral-subtraction denoiser; AGC,
/// VAD and dereverb stay off). Input and output are floats in [-1, 1] at model_sample_rate.
///
/// speexdsp works on 16-bit samples, so the signal is quantised to 16 bits on the way through.
/// The preprocessor delays its output by one frame; this class hides that: output sample i is
/// input sample i, denoised. Output comes in whole frames, so it trails the input by one to two
/// frames until `flush()` at end of stream returns the rest; after flush the total output is
/// exactly as long as the input. The noise estimate adapts over the first few hundred ms.
/// Not thread-safe; one object per channel.
class denoiser {
 public:
  static constexpr int sample_rate = model_sample_rate;  ///< Hz, the only rate supported
  static constexpr std::size_t frame_samples = 160;      ///< 10 ms at 16 kHz
  /// Range of `suppress_db` accepted by create() (config [audio] denoise_suppress_db).
  static constexpr int min_suppress_db = -60;
  static constexpr int max_suppress_db = -3;

  /// `suppress_db`: most attenuation applied to noise, dB, negative. errc::invalid_argument
  /// outside [min_suppress_db, max_suppress_db]; errc::internal if speexdsp cannot start.
  static result<denoiser> create(int suppress_db = -25);

  /// Denoises `samples` (f32 [n]) and returns the output that is complete (f32, whole frames).
  /// errc::invalid_argument after flush() (call reset() first).
  result<std::vector<float>> process(std::span<const float> samples);

  /// Ends the stream: returns the rest of the output, so that total output == total input.
  result<std::vector<float>> flush();

  /// Forgets the stream and the learned noise profile. errc::internal if speexdsp cannot start
  /// a fresh state (the object is then unchanged).
  result<void> reset();

  int suppress_db() const { return suppress_db_; }
  std::size_t num_samples_in() const { return samples_in_; }    ///< input samples so far
  std::size_t num_samples_out() const { return samples_out_; }  ///< output samples so far

 private:
  struct state_deleter {
    void operator()(SpeexPreprocessState_* s) const;
  };
  using state_ptr = std::unique_ptr<SpeexPreprocessState_, state_deleter>;

  static result<state_ptr> make_state(int suppress_db);
  denoiser(int suppress_db, state_ptr state);
  /// Runs one frame of frame_samples from `in` and appends the aligned part to `out`.
  void run_frame(std::span<const float> in, std::vector<float>& out);

  int suppress_db_ = 0;
  state_ptr state_;
  std::vector<float> pending_;        ///< f32 [< frame_samples]: the next, incomplete frame
  std::vector<int16_t> frame_;        ///< i16 [frame_samples]: speexdsp's in/out buffer
  std::size_t delay_left_ = 0;        ///< leading output samples still to drop (speexdsp delay)
  bool flushed_ = false;
  std::size_t samples_in_ = 0;
  std::size_t samples_out_ = 0;
};

}  // namespace sluice::dsp
