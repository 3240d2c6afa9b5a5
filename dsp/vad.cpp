#include "dsp/vad.hpp"

#include <algorithm>
#include <cmath>

#include "dsp/audio.hpp"

namespace sluice::dsp {
namespace {

constexpr int ms_per_s = 1000;
constexpr int samples_per_ms = model_sample_rate / ms_per_s;
constexpr int frames_per_s = model_sample_rate / vad_hop_samples;
// The window is centred on its frame's hop, so it starts this many samples before the hop.
constexpr int window_lead_samples = (vad_spectrum::window_samples - vad_hop_samples) / 2;

// On voiced frames the floor rises at this fraction of its normal rate, so a long vowel-rich
// stretch does not lift it into the speech.
constexpr double voiced_rise_fraction = 0.1;
// High-band energy counts for an edge only if it is within this many dB of the speech band's
// (a fricative's is above it). Narrow-band audio resampled to 16 kHz keeps faint, signal-following
// residue up there (μ-law noise, filter skirts) that would otherwise stretch every region.
constexpr float high_band_guard_db = 10.0f;
// Frames quieter than this (dBFS) are digital silence, a few LSBs of 16-bit audio at most: they
// have no spectral shape to learn.
constexpr float digital_silence_dbfs = -85.0f;
// Frames averaged into the noise shape before only non-speech frames count (100 ms).
constexpr int64_t noise_shape_seed_frames = 10;
// The noise shape follows non-speech frames with this weight per frame (a ~200 ms time constant).
constexpr float noise_shape_weight = 0.05f;

int64_t ms_to_samples(int ms) { return static_cast<int64_t>(ms) * samples_per_ms; }
int64_t ms_to_frames_ceil(int ms) {
  return (ms_to_samples(ms) + vad_hop_samples - 1) / vad_hop_samples;
}

}  // namespace

result<vad> vad::create(const config::vad_config& cfg) {
  if (auto problem = config::section_problem(cfg); !problem.empty())
    return fail(errc::invalid_config, "vad: " + problem);
  auto spectrum = vad_spectrum::create(cfg.band_low_hz, cfg.band_high_hz, cfg.high_band_top_hz, model_sample_rate);
  if (!spectrum) return tl::unexpected(spectrum.error());
  return vad(cfg, std::move(*spectrum));
}

vad::vad(const config::vad_config& cfg, vad_spectrum spectrum)
    : cfg_(cfg),
      spectrum_(std::move(spectrum)),
      min_speech_frames_(ms_to_frames_ceil(cfg.min_speech_ms)),
      min_silence_frames_(ms_to_frames_ceil(cfg.min_silence_ms)),
      max_edge_frames_(ms_to_samples(cfg.max_edge_ms) / vad_hop_samples),
      preroll_samples_(ms_to_samples(cfg.preroll_ms)),
      hangover_samples_(ms_to_samples(cfg.hangover_ms)),
      min_voiced_frames_(ms_to_frames_ceil(cfg.min_voiced_ms)),
      floor_(cfg.floor_rise_db_per_s / frames_per_s, ms_to_frames_ceil(cfg.floor_relearn_ms)),
      high_floor_(cfg.floor_rise_db_per_s / frames_per_s, ms_to_frames_ceil(cfg.floor_relearn_ms)) {
  reset();
}

void vad::reset() {
  pending_.assign(window_lead_samples, 0.0f);
  samples_seen_ = 0;
  next_frame_ = 0;
  floor_.reset();
  high_floor_.reset();
  noise_shape_.assign(spectrum_.speech_bins(), 0.0f);
  noise_frames_ = 0;
  recent_snr_db_.fill(0.0f);
  recent_high_snr_db_.fill(0.0f);
  recent_edges_.assign(static_cast<std::size_t>(max_edge_frames_) + 1, false);
  state_ = state::silence;
  first_core_ = first_active_ = 0;
  voiced_frames_ = 0;
  last_core_ = last_active_ = 0;
  last_end_sample_ = 0;
}

vad_output vad::accept(std::span<const float> samples) {
  vad_output out;
  out.first_frame = next_frame_;
  samples_seen_ += static_cast<int64_t>(samples.size());
  // pending_ never holds more than one window, however long the input: top it up, measure, and
  // slide it on by a hop.
  constexpr auto window = static_cast<std::size_t>(vad_spectrum::window_samples);
  std::size_t used = 0;
  for (;;) {
    const std::size_t take = std::min(window - pending_.size(), samples.size() - used);
    // Copied whole, then any NaN or infinity zeroed (a branch per sample in a push_back loop
    // was a fifth of the VAD's own time).
    const std::size_t at = pending_.size();
    pending_.insert(pending_.end(), samples.begin() + static_cast<std::ptrdiff_t>(used),
                    samples.begin() + static_cast<std::ptrdiff_t>(used + take));
    float* const fresh = pending_.data() + at;
    for (std::size_t i = 0; i < take; ++i) fresh[i] = std::isfinite(fresh[i]) ? fresh[i] : 0.0f;
    used += take;
    if (pending_.size() < window) break;
    measure_frame(pending_, out);
    pending_.erase(pending_.begin(), pending_.begin() + vad_hop_samples);
  }
  return out;
}

vad_output vad::finish() {
  vad_output out;
  out.first_frame = next_frame_;
  // Frames still owed: one per started hop. The stream is silent after its end.
  const int64_t total_frames = (samples_seen_ + vad_hop_samples - 1) / vad_hop_samples;
  while (next_frame_ < total_frames) {
    pending_.resize(vad_spectrum::window_samples, 0.0f);
    measure_frame(pending_, out);
    pending_.erase(pending_.begin(), pending_.begin() + vad_hop_samples);
  }
  if (state_ == state::pending && confirmable()) {
    state_ = state::speech;
    out.events.push_back({vad_event_kind::speech_start, start_sample(), next_frame_});
  }
  if (state_ == state::speech) close_region(samples_seen_, out);
  reset();
  return out;
}

void vad::measure_frame(std::span<const float> window, vad_output& out) {
  spectrum_.analyze(window);
  const std::span<const float> power = spectrum_.speech_band();
  const std::span<const float> high = spectrum_.high_band();
  vad_frame f;
  f.energy_db = band_energy_db(power);
  f.high_energy_db = high.empty() ? energy_floor_db : band_energy_db(high);
  // The first frame is its own floor; if the stream opens with speech, the floors fall to the
  // noise in the first pause.
  f.floor_db = floor_.seeded() ? static_cast<float>(floor_.value_db()) : f.energy_db;
  f.high_floor_db = high_floor_.seeded() ? static_cast<float>(high_floor_.value_db()) : f.high_energy_db;
  f.flatness_db = whitened_flatness_db(power, noise_shape_);

  const double snr_db = f.energy_db - f.floor_db;
  const bool loud_enough = f.energy_db >= cfg_.min_level_dbfs;
  // Flatness means nothing until the noise shape has its first frames.
  const bool voiced = noise_frames_ >= noise_shape_seed_frames && f.flatness_db <= cfg_.voiced_flatness_db;
  f.active = loud_enough && (snr_db >= cfg_.threshold_db || (voiced && snr_db >= cfg_.voiced_threshold_db));

  // Voiced frames are almost surely speech: the floors barely rise on them, so a long vowel-rich
  // stretch does not lift the floor into the speech.
  const double rise_scale = voiced ? voiced_rise_fraction : 1.0;
  floor_.update(f.energy_db, rise_scale, voiced);
  high_floor_.update(f.high_energy_db, rise_scale, voiced);
  const bool digital_silence = f.energy_db < digital_silence_dbfs;
  if (!digital_silence && (!f.active || noise_frames_ < noise_shape_seed_frames)) learn_noise_shape(power);

  const bool edge = is_edge(f, snr_db);
  out.frames.push_back(f);
  smooth(f.active, f.active && voiced, edge, out);
  ++next_frame_;
}

void vad::learn_noise_shape(std::span<const float> power) {
  // The noise shape is the mean spectrum of non-speech frames. Its first frames are averaged
  // whatever they are (see measure_frame): a shape from too few frames is so ragged that
  // whitening by it makes noise look voiced. Digital silence has no shape and is never learnt;
  // whitening by it would make coloured noise after it look voiced too.
  const float weight = std::max(noise_shape_weight, 1.0f / static_cast<float>(++noise_frames_));
  for (std::size_t k = 0; k < noise_shape_.size(); ++k) noise_shape_[k] += weight * (power[k] - noise_shape_[k]);
}

bool vad::is_edge(const vad_frame& f, double snr_db) {
  // Edges are judged on SNRs averaged over the latest frames: a fading vowel or a fricative
  // hovers a few dB above the noise, and single frames of it dip below any useful threshold.
  const auto slot = static_cast<std::size_t>(next_frame_ % edge_smoothing_frames);
  recent_snr_db_[slot] = static_cast<float>(snr_db);
  recent_high_snr_db_[slot] = f.high_energy_db - f.high_floor_db;
  const int64_t count = std::min<int64_t>(next_frame_ + 1, edge_smoothing_frames);
  auto mean = [count](const auto& ring) {
    float sum = 0;
    for (int64_t i = 0; i < count; ++i) sum += ring[static_cast<std::size_t>(i)];
    return sum / static_cast<float>(count);
  };
  const bool speech_band = f.energy_db >= cfg_.min_level_dbfs && mean(recent_snr_db_) >= cfg_.edge_threshold_db;
  const bool high_band = f.high_energy_db >= cfg_.min_level_dbfs &&
                         f.high_energy_db >= f.energy_db - high_band_guard_db &&
                         mean(recent_high_snr_db_) >= cfg_.edge_threshold_db;
  return speech_band || high_band;
}

void vad::smooth(bool active, bool voiced, bool edge, vad_output& out) {
  const int64_t t = next_frame_;
  if (active) {
    if (state_ == state::silence) {
      state_ = state::pending;
      first_core_ = t;
      first_active_ = t - edge_run_before(t);
      voiced_frames_ = 0;
    }
    last_core_ = t;
    last_active_ = t;
    if (voiced) ++voiced_frames_;
    if (state_ == state::pending && confirmable()) {
      state_ = state::speech;
      out.events.push_back({vad_event_kind::speech_start, start_sample(), next_frame_});
    }
  } else if (state_ != state::silence && edge && t == last_active_ + 1 &&
             t - last_core_ <= max_edge_frames_) {
    last_active_ = t;
  } else if (state_ != state::silence && t - last_active_ >= min_silence_frames_) {
    // check() keeps hangover within min_silence_ms, so this end is never past frame t.
    if (state_ == state::speech) close_region((t + 1) * vad_hop_samples, out);
    state_ = state::silence;
  }
  recent_edges_[static_cast<std::size_t>(t % static_cast<int64_t>(recent_edges_.size()))] = edge;
}

int64_t vad::edge_run_before(int64_t t) const {
  const auto ring = static_cast<int64_t>(recent_edges_.size());
  int64_t run = 0;
  while (run < max_edge_frames_ && t - run - 1 >= 0 &&
         recent_edges_[static_cast<std::size_t>((t - run - 1) % ring)])
    ++run;
  return run;
}

bool vad::confirmable() const {
  return last_core_ - first_core_ + 1 >= min_speech_frames_ && voiced_frames_ >= min_voiced_frames_;
}

int64_t vad::start_sample() const {
  return std::max(first_active_ * vad_hop_samples - preroll_samples_, last_end_sample_);
}

void vad::close_region(int64_t end_limit, vad_output& out) {
  const int64_t end = std::min((last_active_ + 1) * vad_hop_samples + hangover_samples_, end_limit);
  out.events.push_back({vad_event_kind::speech_end, end, next_frame_});
  last_end_sample_ = end;
  state_ = state::silence;
}

result<vad_analysis> analyze_speech(std::span<const float> samples, const config::vad_config& cfg) {
  auto detector = vad::create(cfg);
  if (!detector) return tl::unexpected(detector.error());
  vad_analysis result;
  result.frames.reserve(samples.size() / vad_hop_samples + 1);
  int64_t open_start = -1;
  auto collect = [&](vad_output&& out) {
    result.frames.insert(result.frames.end(), out.frames.begin(), out.frames.end());
    for (const vad_event& e : out.events) {
      if (e.kind == vad_event_kind::speech_start) {
        open_start = e.sample;
      } else {
        result.regions.push_back({open_start, e.sample});
      }
    }
  };
  collect(detector->accept(samples));
  collect(detector->finish());
  return result;
}

}  // namespace sluice::dsp
