#include "dsp/fbank.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "dsp/lane_sum.hpp"

namespace sluice::dsp {
namespace {

/// Samples in [-1, 1] become the 16-bit integer range Kaldi features are defined on.
constexpr double pcm16_scale = 32768.0;
constexpr double ms_to_s = 0.001;
/// Kaldi's mel scale: mel(f) = mel_multiplier * ln(1 + f / mel_break_hz).
constexpr double mel_multiplier = 1127.0;
constexpr double mel_break_hz = 700.0;
/// Povey window: a Hann window raised to this power (like Hann but reaching zero more gently).
constexpr double povey_exponent = 0.85;
/// Kaldi (and torchaudio) need more than this many mel bins.
constexpr int min_mel_bins_exclusive = 3;
constexpr std::size_t min_window_samples = 2;
/// Floor before the log: std::numeric_limits<float>::epsilon(), as Kaldi uses.
constexpr double log_floor = std::numeric_limits<float>::epsilon();

double mel_scale(double hz) { return mel_multiplier * std::log(1.0 + hz / mel_break_hz); }

/// Samples in `ms` milliseconds, truncated, computed in the same order as torchaudio so a
/// rate/length pair that lands a hair under an integer truncates the same way. Kept as a double
/// so a non-finite or huge config value is caught by a comparison, not an overflowing cast.
double ms_to_samples(int sample_rate, double ms) {
  return std::trunc(static_cast<double>(sample_rate) * ms * ms_to_s);
}

}  // namespace

result<fbank_computer> fbank_computer::create(const config::fbank_config& cfg, int sample_rate) {
  if (sample_rate <= 0) {
    return fail(errc::invalid_argument,
                "fbank: sample rate must be positive, got " + std::to_string(sample_rate));
  }
  const double window_samples = ms_to_samples(sample_rate, cfg.frame_length_ms);
  const double shift_samples = ms_to_samples(sample_rate, cfg.frame_shift_ms);
  if (!(window_samples >= static_cast<double>(min_window_samples))) {
    return fail(errc::invalid_config, "fbank: frame_length_ms " + std::to_string(cfg.frame_length_ms) +
                                          " gives under 2 samples at " +
                                          std::to_string(sample_rate) + " Hz");
  }
  if (!(window_samples <= static_cast<double>(real_fft::max_size))) {
    return fail(errc::invalid_config, "fbank: frame_length_ms " + std::to_string(cfg.frame_length_ms) +
                                          " gives a window longer than the largest FFT (" +
                                          std::to_string(real_fft::max_size) + " samples)");
  }
  // A shift is only ever added to frame starts, so bound it like the window.
  if (!(shift_samples >= 1.0 && shift_samples <= static_cast<double>(real_fft::max_size))) {
    return fail(errc::invalid_config, "fbank: frame_shift_ms " + std::to_string(cfg.frame_shift_ms) +
                                          " must give 1 to " + std::to_string(real_fft::max_size) +
                                          " samples at " + std::to_string(sample_rate) + " Hz");
  }
  const auto window_size = static_cast<std::size_t>(window_samples);
  const auto shift = static_cast<std::size_t>(shift_samples);
  if (!(cfg.preemphasis >= 0.0 && cfg.preemphasis <= 1.0)) {
    return fail(errc::invalid_config,
                "fbank: preemphasis must be in [0, 1], got " + std::to_string(cfg.preemphasis));
  }
  if (cfg.num_mel_bins <= min_mel_bins_exclusive) {
    return fail(errc::invalid_config, "fbank: num_mel_bins must be > 3, got " +
                                          std::to_string(cfg.num_mel_bins));
  }
  const double nyquist = 0.5 * sample_rate;
  const double low_hz = cfg.low_freq_hz;
  const double high_hz = cfg.high_freq_hz <= 0.0 ? cfg.high_freq_hz + nyquist : cfg.high_freq_hz;
  if (!(low_hz >= 0.0 && low_hz < nyquist && high_hz > 0.0 && high_hz <= nyquist &&
        low_hz < high_hz)) {
    return fail(errc::invalid_config, "fbank: mel band [" + std::to_string(low_hz) + ", " +
                                          std::to_string(high_hz) +
                                          "] Hz must satisfy 0 <= low < high <= Nyquist (" +
                                          std::to_string(nyquist) + " Hz)");
  }

  // Kaldi's round_to_power_of_two: the FFT is the next power of two at or above the window.
  const std::size_t fft_size = std::bit_ceil(window_size);
  auto fft = real_fft::create(fft_size);
  if (!fft) return tl::unexpected(fft.error());
  if (window_size > fft->size()) {  // holds by construction; kept as the contract's guard
    return fail(errc::invalid_config, "fbank: window of " + std::to_string(window_size) +
                                          " samples is longer than the FFT size " +
                                          std::to_string(fft->size()));
  }

  fbank_computer fc(std::move(*fft));
  fc.sample_rate_ = sample_rate;
  fc.frame_shift_ = shift;
  fc.preemphasis_ = cfg.preemphasis;

  // Symmetric Hann (periodic=False) raised to the povey exponent.
  // The clamp keeps a rounding-negative end point from becoming NaN under pow.
  fc.window_.resize(window_size);
  const double denom = static_cast<double>(window_size - 1);
  for (std::size_t i = 0; i < fc.window_.size(); ++i) {
    const double hann = 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * static_cast<double>(i) / denom);
    fc.window_[i] = std::pow(std::max(hann, 0.0), povey_exponent);
  }

  // Triangles equally spaced in mel between the band edges; neighbours overlap by half, so the
  // band is cut into num_mel_bins + 1 steps. The Nyquist bin gets no weight (Kaldi's layout).
  //
  // The weights are computed in float32, operation for operation as torchaudio's get_mel_banks
  // does (it builds them in the default dtype whatever the input's). In double they would be
  // closer to the ideal triangles, but up to ~1e-5 off torchaudio's, and a strong tone on a
  // small weight turns that into ~1e-3 in the log; in float32 they agree to the last bit except
  // where torch's vectorised log rounds differently from libm's (a handful of bins, <= 1 ulp).
  const std::size_t num_fft_bins = fft_size / 2;
  const auto bin_width_hz =
      static_cast<float>(static_cast<double>(sample_rate) / static_cast<double>(fft_size));
  const double mel_low_d = mel_scale(low_hz);
  const auto mel_step = static_cast<float>((mel_scale(high_hz) - mel_low_d) / (cfg.num_mel_bins + 1));
  const auto mel_low = static_cast<float>(mel_low_d);
  std::vector<float> fft_bin_mel(num_fft_bins);
  for (std::size_t i = 0; i < num_fft_bins; ++i) {
    const float hz = static_cast<float>(i) * bin_width_hz;
    fft_bin_mel[i] = static_cast<float>(mel_multiplier) *
                     std::log(1.0f + hz / static_cast<float>(mel_break_hz));
  }
  fc.mel_banks_.resize(static_cast<std::size_t>(cfg.num_mel_bins));
  for (int b = 0; b < cfg.num_mel_bins; ++b) {
    const auto bf = static_cast<float>(b);
    const float left = mel_low + bf * mel_step;
    const float center = mel_low + (bf + 1.0f) * mel_step;
    const float right = mel_low + (bf + 2.0f) * mel_step;
    mel_bank& bank = fc.mel_banks_[static_cast<std::size_t>(b)];
    bool started = false;
    for (std::size_t i = 0; i < num_fft_bins; ++i) {
      const float mel = fft_bin_mel[i];
      const float weight =
          std::max(0.0f, std::min((mel - left) / (center - left), (right - mel) / (right - center)));
      if (weight > 0.0f) {
        if (!started) bank.first_bin = i;
        started = true;
        bank.weights.resize(i - bank.first_bin + 1, 0.0);
        bank.weights.back() = weight;
      }
    }
    if (!started) {
      return fail(errc::invalid_config,
                  "fbank: mel bin " + std::to_string(b) + " covers no FFT bin; num_mel_bins " +
                      std::to_string(cfg.num_mel_bins) + " is too many for a " +
                      std::to_string(fft_size) + "-point FFT over [" + std::to_string(low_hz) +
                      ", " + std::to_string(high_hz) + "] Hz");
    }
  }
  return fc;
}

std::size_t fbank_computer::num_frames(std::size_t num_samples) const {
  if (num_samples < frame_length()) return 0;
  return 1 + (num_samples - frame_length()) / frame_shift_;
}

fbank_computer::workspace fbank_computer::make_workspace() const {
  return workspace{std::vector<double>(fft_.size(), 0.0),
                   std::vector<std::complex<double>>(fft_.num_bins())};
}

std::vector<float> fbank_computer::compute(std::span<const float> samples) const {
  const std::size_t n_frames = num_frames(samples.size());
  std::vector<float> features(n_frames * num_mels());
  workspace ws = make_workspace();
  for (std::size_t f = 0; f < n_frames; ++f) {
    compute_frame(samples.subspan(f * frame_shift_, frame_length()),
                  std::span<float>(features).subspan(f * num_mels(), num_mels()), ws);
  }
  return features;
}

void fbank_computer::compute_frame(std::span<const float> frame, std::span<float> out,
                                   workspace& ws) const {
  const std::size_t len = frame_length();
  assert(frame.size() == len);
  assert(out.size() == num_mels());
  assert(ws.frame.size() == fft_.size() && ws.spectrum.size() == fft_.num_bins());
  std::vector<double>& x = ws.frame;

  // Double precision throughout: the reference runs in float32, and staying well below its
  // rounding error keeps our side out of the parity budget.
  // The mean in four running sums (lane_sum: one sum's chain of dependent additions was a third
  // of this function's time; the order's rounding is at the 1e-16 level, far below the float32
  // output's resolution and the float32 reference's own rounding).
  std::size_t i = 0;
  for (; i < len; ++i) x[i] = static_cast<double>(frame[i]) * pcm16_scale;
  const double mean = lane_sum(std::span<const double>(x).first(len)) / static_cast<double>(len);
  for (i = 0; i < len; ++i) x[i] -= mean;

  // Pre-emphasis from the back so each step still sees the previous raw sample; the first
  // sample uses itself as its predecessor (Kaldi's replicate padding).
  for (i = len - 1; i > 0; --i) x[i] -= preemphasis_ * x[i - 1];
  x[0] -= preemphasis_ * x[0];

  for (i = 0; i < len; ++i) x[i] *= window_[i];
  std::fill(x.begin() + static_cast<std::ptrdiff_t>(len), x.end(), 0.0);

  fft_.forward(x, ws.spectrum);

  // Neighbouring triangles overlap by half, so most bins feed two banks: each bin's power is
  // taken once, into the frame buffer (free after the transform; fft_size >= its bins), instead
  // of once per bank. Every bin, so no bank can read one not computed (the banks span nearly
  // all of them anyway). The same products in the same order: the same bits.
  for (std::size_t k = 0; k < ws.spectrum.size(); ++k) x[k] = std::norm(ws.spectrum[k]);
  for (std::size_t b = 0; b < mel_banks_.size(); ++b) {
    const mel_bank& bank = mel_banks_[b];
    const double* power = x.data() + bank.first_bin;
    double energy = 0.0;
    for (std::size_t k = 0; k < bank.weights.size(); ++k) energy += bank.weights[k] * power[k];
    out[b] = static_cast<float>(std::log(std::max(energy, log_floor)));
  }
}

streaming_fbank::streaming_fbank(std::shared_ptr<const fbank_computer> computer)
    : computer_(std::move(computer)), workspace_(computer_->make_workspace()) {}

result<streaming_fbank> streaming_fbank::create(const config::fbank_config& cfg, int sample_rate) {
  auto fc = fbank_computer::create(cfg, sample_rate);
  if (!fc) return tl::unexpected(fc.error());
  return streaming_fbank(std::make_shared<const fbank_computer>(std::move(*fc)));
}

std::vector<float> streaming_fbank::accept(std::span<const float> samples) {
  samples_in_ += samples.size();
  // A shift longer than the window leaves a gap between frames whose samples are never used.
  const std::size_t skip = std::min(to_skip_, samples.size());
  to_skip_ -= skip;
  pending_.insert(pending_.end(), samples.begin() + static_cast<std::ptrdiff_t>(skip),
                  samples.end());

  const fbank_computer& fc = *computer_;
  const std::size_t n_frames = fc.num_frames(pending_.size());
  std::vector<float> features(n_frames * fc.num_mels());
  const std::span<const float> buffered(pending_);
  for (std::size_t f = 0; f < n_frames; ++f) {
    fc.compute_frame(buffered.subspan(f * fc.frame_shift(), fc.frame_length()),
                     std::span<float>(features).subspan(f * fc.num_mels(), fc.num_mels()),
                     workspace_);
  }
  frames_out_ += n_frames;

  // Keep only what the next frame needs: everything from its first sample on.
  const std::size_t consumed = n_frames * fc.frame_shift();
  if (consumed <= pending_.size()) {
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(consumed));
  } else {
    to_skip_ = consumed - pending_.size();
    pending_.clear();
  }
  return features;
}

void streaming_fbank::reset() {
  pending_.clear();
  to_skip_ = 0;
  frames_out_ = 0;
  samples_in_ = 0;
}

}  // namespace sluice::dsp
