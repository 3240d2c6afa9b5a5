#pragma once
/// Streaming voice activity detection on 16 kHz mono audio.
///
/// Every 10 ms frame is measured over a 25 ms window: the energy of the speech band
/// (config band_low_hz .. band_high_hz) and the flatness of its spectrum after dividing out the
/// noise's shape. A frame is speech when its energy stands threshold_db above an adaptive noise
/// floor (vad_floor), or voiced_threshold_db above it with a peaky (voiced) spectrum. The floor
/// follows the quiet frames, so steady noise of any colour is learnt and is not speech.
/// Frame decisions are then smoothed into speech regions: pauses shorter than min_silence_ms are
/// bridged and regions shorter than min_speech_ms dropped. A region grows over the neighbouring
/// frames whose speech-band or high-band (band_high_hz .. high_band_top_hz, fricatives) energy is
/// edge_threshold_db above its floor, and is finally widened by preroll_ms / hangover_ms.
/// A region also needs min_voiced_ms of voiced frames, which noise bursts and steps lack.
///
/// Frame i stands for samples [160 i, 160 i + 160) and is measured over the window centred on
/// them; the stream is taken to be silent before its first sample. Results depend only on the
/// samples, never on how they are split into accept() calls.
/// Not thread-safe; one object per stream (about 20 KiB, most of it the FFT plan and buffers).

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "config/vad_config.hpp"
#include "dsp/vad_floor.hpp"
#include "dsp/vad_spectrum.hpp"

namespace sluice::dsp {

/// Hop between VAD frames: 10 ms at 16 kHz (samples).
inline constexpr int vad_hop_samples = 160;

/// What the VAD measured and decided for one frame.
struct vad_frame {
  float energy_db = 0;       ///< speech-band energy, dB re full scale
  float floor_db = 0;        ///< speech-band noise floor the frame was judged against, dB
  float high_energy_db = 0;  ///< high-band energy, dB re full scale (energy_floor_db when off)
  float high_floor_db = 0;   ///< high-band noise floor, dB
  float flatness_db = 0;     ///< noise-whitened spectral flatness, dB (<= 0; ~-2.5 for noise)
  bool active = false;       ///< this frame alone looks like speech (before duration smoothing)
};

/// Samples [start_sample, end_sample) of a stream, 16 kHz.
struct speech_region {
  int64_t start_sample = 0;
  int64_t end_sample = 0;
  bool operator==(const speech_region&) const = default;
};

enum class vad_event_kind { speech_start, speech_end };

/// A region boundary. Events come in start/end pairs, in order; `sample` lies in the past of the
/// call that reports it (a start is confirmed at least min_speech_ms late, an end min_silence_ms
/// late), but never past the end of the frame that decided it.
struct vad_event {
  vad_event_kind kind = vad_event_kind::speech_start;
  int64_t sample = 0;  ///< 16 kHz sample index of the boundary
  /// The frame whose measurement confirmed it; for what finish() closes, the frame count.
  int64_t decided_at_frame = 0;
  bool operator==(const vad_event&) const = default;
};

/// What one accept()/finish() call produced.
struct vad_output {
  int64_t first_frame = 0;         ///< index of frames[0] in the stream
  std::vector<vad_frame> frames;   ///< frames completed by this call, in order
  std::vector<vad_event> events;   ///< region boundaries confirmed by this call, in order
};

class vad {
 public:
  /// errc::invalid_config when a field is out of its documented range or check() fails.
  static result<vad> create(const config::vad_config& cfg);

  /// Feeds the next samples (16 kHz mono, [-1, 1]; non-finite values are taken as 0).
  vad_output accept(std::span<const float> samples);

  /// Ends the stream: measures the last partial frames (padded with silence), closes an open
  /// region at the last sample, and resets the detector for a new stream.
  vad_output finish();

  /// Frames completed so far; the stream position the VAD has judged up to is
  /// frames_done() * vad_hop_samples.
  int64_t frames_done() const { return next_frame_; }
  /// Samples accepted so far.
  int64_t samples_seen() const { return samples_seen_; }
  /// True while a confirmed region is open (its start reported, its end not yet).
  bool in_speech() const { return state_ == state::speech; }
  /// While a region is open: the least its end can turn out to be. It ends no earlier than the
  /// end of its latest active frame (an end is confirmed min_silence_ms after it, widened by
  /// the hangover), unless the stream ends first, and no stream ends before the samples seen.
  int64_t open_region_end_bound() const {
    return std::min((last_active_ + 1) * vad_hop_samples, samples_seen_);
  }

 private:
  enum class state { silence, pending, speech };
  /// Frames whose SNR is averaged for the edge decision.
  static constexpr int64_t edge_smoothing_frames = 3;

  vad(const config::vad_config& cfg, vad_spectrum spectrum);
  void measure_frame(std::span<const float> window, vad_output& out);
  void learn_noise_shape(std::span<const float> power);
  bool is_edge(const vad_frame& f, double snr_db);
  void smooth(bool active, bool voiced, bool edge, vad_output& out);
  bool confirmable() const;
  int64_t edge_run_before(int64_t frame) const;
  int64_t start_sample() const;
  void close_region(int64_t end_limit, vad_output& out);
  void reset();

  config::vad_config cfg_;
  vad_spectrum spectrum_;
  int64_t min_speech_frames_ = 0;
  int64_t min_silence_frames_ = 0;
  int64_t max_edge_frames_ = 0;
  int64_t preroll_samples_ = 0;
  int64_t hangover_samples_ = 0;
  int64_t min_voiced_frames_ = 0;

  std::vector<float> pending_;      ///< the next frame's window as far as it has arrived
  int64_t samples_seen_ = 0;
  int64_t next_frame_ = 0;

  vad_floor floor_;                 ///< speech band
  vad_floor high_floor_;            ///< high band
  std::vector<float> noise_shape_;  ///< f32 [speech-band bins], mean power of non-speech frames
  int64_t noise_frames_ = 0;        ///< frames learnt into noise_shape_ so far
  std::array<float, edge_smoothing_frames> recent_snr_db_{};       ///< ring: speech-band SNR
  std::array<float, edge_smoothing_frames> recent_high_snr_db_{};  ///< ring: high-band SNR
  std::vector<bool> recent_edges_;  ///< ring [max_edge_frames + 1]: was frame t an edge frame

  state state_ = state::silence;
  int64_t first_core_ = 0;          ///< first active frame of the pending/open region
  int64_t last_core_ = 0;           ///< latest active frame of the pending/open region
  int64_t first_active_ = 0;        ///< first frame of the region, edge frames included
  int64_t last_active_ = 0;         ///< latest frame of the region, edge frames included
  int64_t voiced_frames_ = 0;       ///< voiced active frames in the pending/open region
  int64_t last_end_sample_ = 0;     ///< end of the previous region; the next starts no earlier
};

/// The whole-buffer result of analyze_speech().
struct vad_analysis {
  std::vector<vad_frame> frames;        ///< one per 10 ms, ceil(n / 160) in all
  std::vector<speech_region> regions;   ///< in order, disjoint, within [0, n)
};

/// Runs a fresh vad over all of `samples` (16 kHz mono) and collects frames and regions.
result<vad_analysis> analyze_speech(std::span<const float> samples, const config::vad_config& cfg);

}  // namespace sluice::dsp
