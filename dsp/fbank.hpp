#pragma once
/// Kaldi-compatible log-mel filterbank features, offline and streaming.
///
/// The output matches torchaudio.compliance.kaldi.fbank(waveform * 32768, num_mel_bins, frame_length,
/// frame_shift, low_freq, high_freq, preemphasis_coefficient, dither=0.0, energy_floor=0.0,
/// sample_frequency) with every other option at its default: snip_edges (only whole frames),
/// per-frame DC removal, pre-emphasis with the frame's first sample repeated, povey window
/// (Hann ^ 0.85), zero padding to the next power of two, power spectrum, Kaldi mel banks
/// (mel = 1127 ln(1 + f / 700), triangles in mel space, zero weight on the Nyquist bin), and
/// log with a floor at float epsilon. No energy column is emitted.
///
/// Input samples are floats in [-1, 1]; they are scaled by 32768 inside (the 16-bit range Kaldi
/// and the training recipe use), so callers never scale.

#include <complex>
#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "config/error.hpp"
#include "config/fbank_config.hpp"
#include "dsp/audio.hpp"
#include "dsp/fft.hpp"

namespace sluice::dsp {

/// Read-only feature extractor: window, mel banks and FFT plan computed once from the config.
/// `compute_frame` and `compute` are const and allocate only their own scratch, so one
/// `fbank_computer` may be shared by every stream and thread.
class fbank_computer {
 public:
  /// Per-call work buffers for `compute_frame`, sized by `make_workspace()`.
  struct workspace {
    std::vector<double> frame;                  ///< f64 [fft_size]
    std::vector<std::complex<double>> spectrum; ///< c128 [fft_size / 2 + 1]
  };

  /// Validates `cfg` against `sample_rate` (Hz) and precomputes everything. errc::invalid_config
  /// when a value cannot work: window < 2 samples, shift < 1 sample, window longer than the FFT,
  /// fewer than 4 mel bins, band edges outside [0, Nyquist] or crossed, a mel bin that covers no
  /// FFT bin (too many bins for the FFT size), pre-emphasis outside [0, 1]; errc::invalid_argument
  /// for a sample rate <= 0.
  static result<fbank_computer> create(const config::fbank_config& cfg,
                                       int sample_rate = model_sample_rate);

  int sample_rate() const { return sample_rate_; }          ///< Hz
  std::size_t num_mels() const { return mel_banks_.size(); } ///< features per frame
  std::size_t frame_length() const { return window_.size(); } ///< samples per frame
  std::size_t frame_shift() const { return frame_shift_; }  ///< samples between frame starts
  std::size_t fft_size() const { return fft_.size(); }      ///< samples, a power of two

  /// Frames `num_samples` samples yield: 0 if fewer than frame_length(), else
  /// 1 + (num_samples - frame_length()) / frame_shift() (snip_edges).
  std::size_t num_frames(std::size_t num_samples) const;

  /// Features of a whole signal. `samples`: f32 [n_samples] in [-1, 1] at sample_rate().
  /// Returns f32 [num_frames(n_samples), num_mels()], row-major.
  std::vector<float> compute(std::span<const float> samples) const;

  workspace make_workspace() const;

  /// Features of one frame. `frame`: f32 [frame_length()]; `out`: f32 [num_mels()].
  /// Preconditions (asserted): the sizes above, `ws` from make_workspace() of this object.
  void compute_frame(std::span<const float> frame, std::span<float> out, workspace& ws) const;

 private:
  /// One triangular filter, stored sparsely: weights for FFT bins first_bin .. first_bin+size-1.
  struct mel_bank {
    std::size_t first_bin = 0;
    std::vector<double> weights;
  };

  explicit fbank_computer(real_fft fft) : fft_(std::move(fft)) {}

  int sample_rate_ = 0;
  std::size_t frame_shift_ = 0;
  double preemphasis_ = 0.0;
  std::vector<double> window_;        ///< f64 [frame_length]: povey window
  std::vector<mel_bank> mel_banks_;   ///< [num_mels]
  real_fft fft_;
};

/// Per-stream fbank: feeds audio in chunks of any size and gets back each frame as soon as its
/// last sample has arrived. The frames are bit-identical to `fbank_computer::compute` on the
/// concatenated input, whatever the chunking. Samples after the last whole frame are kept until
/// more arrive; with snip_edges there is nothing to flush at the end of a stream.
/// Not thread-safe; one object per channel.
class streaming_fbank {
 public:
  /// `computer` must not be null; it is shared, read-only.
  explicit streaming_fbank(std::shared_ptr<const fbank_computer> computer);

  /// Convenience: builds its own computer (see fbank_computer::create for the errors).
  static result<streaming_fbank> create(const config::fbank_config& cfg,
                                        int sample_rate = model_sample_rate);

  /// Appends `samples` (f32, [-1, 1]) and returns the frames they complete:
  /// f32 [n_new_frames, num_mels()], row-major; often empty for short chunks.
  std::vector<float> accept(std::span<const float> samples);

  std::size_t num_frames_out() const { return frames_out_; }   ///< frames returned so far
  std::size_t num_samples_in() const { return samples_in_; }   ///< samples accepted so far
  std::size_t num_mels() const { return computer_->num_mels(); }
  const fbank_computer& computer() const { return *computer_; }

  /// Forgets all input, ready for a new stream.
  void reset();

 private:
  std::shared_ptr<const fbank_computer> computer_;
  fbank_computer::workspace workspace_;
  std::vector<float> pending_;  ///< f32: samples from the start of the next frame onwards
  std::size_t to_skip_ = 0;     ///< samples still to drop before the next frame starts
  std::size_t frames_out_ = 0;
  std::size_t samples_in_ = 0;
};

}  // namespace sluice::dsp
