#pragma once
/// Offline slicing of a whole recording into model-sized segments.
///
/// The VAD finds the speech regions of the file; neighbouring regions are merged into one
/// segment while it stays within max_s (a segment spans from its first region's start to its last
/// region's end, pauses included). A region longer than max_s is cut at its quietest frame
/// (lowest band energy, smoothed over 50 ms) between min_s and max_s from the segment's start,
/// preferring cuts that leave at least min_s for the rest. Segments shorter than min_s remain
/// where the speech itself is isolated by long pauses.
///
/// Positions are 16 kHz sample indices; segments are in order, disjoint, within [0, n).

#include <cstdint>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "config/vad_config.hpp"
#include "dsp/vad.hpp"

namespace sluice::dsp {

/// Samples [start_sample, end_sample) of the recording, 16 kHz.
struct segment {
  int64_t start_sample = 0;
  int64_t end_sample = 0;
  bool operator==(const segment&) const = default;
};

/// Groups `regions` (in order, disjoint) into segments. `frames` are the VAD frames of the same
/// audio (frame i covers samples [160 i, 160 i + 160)), used to find quiet cut points; a region
/// beyond the frames is cut at max_s. `cfg` must be valid (see section_problem).
std::vector<segment> group_regions(std::span<const speech_region> regions,
                                   std::span<const vad_frame> frames,
                                   const config::segment_config& cfg);

/// The same segments as slice() gives for the whole recording, found while the recording is fed
/// in pieces: each segment is given out as soon as no later audio can change it (the regions
/// after it are far enough away, or a region too long for one segment has run past the point
/// where its cut can move), so a long recording's first segments go to recognition while the
/// rest is still being analysed. Each accept() that brings new VAD frames regroups only the
/// regions not yet given out. How the audio is split
/// into accept() calls changes when segments come out, never which.
/// Not thread-safe; one object per recording channel.
class segment_stream {
 public:
  /// errc::invalid_config when either section is invalid.
  static result<segment_stream> create(const config::vad_config& vad_cfg, const config::segment_config& segment_cfg);
  /// Feeds the next samples (16 kHz mono); returns the segments that became final, in order.
  std::vector<segment> accept(std::span<const float> samples16k);
  /// Ends the recording; returns the remaining segments. The stream is then spent.
  std::vector<segment> finish();

 private:
  segment_stream(vad detector, const config::segment_config& cfg);
  void take(vad_output&& out);
  std::vector<segment> emit(bool finished);

  vad vad_;
  config::segment_config cfg_;
  std::vector<vad_frame> frames_;
  // The closed regions not yet given out in full (the first may start where the last segment
  // given out ended), then the open one's start (-1 when none).
  std::vector<speech_region> regions_;
  int64_t open_start_ = -1;
  std::size_t grouped_frames_ = 0;  // frames_.size() at the last grouping
};

/// The segments of a whole recording (16 kHz mono, [-1, 1]).
/// errc::invalid_config when either config section is invalid.
result<std::vector<segment>> slice(std::span<const float> samples16k, const config::vad_config& vad_cfg,
                                   const config::segment_config& segment_cfg);

}  // namespace sluice::dsp
