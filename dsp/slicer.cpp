#include "dsp/slicer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dsp/audio.hpp"

namespace sluice::dsp {
namespace {

// Cut candidates are judged by band energy averaged over this many frames either side (50 ms in
// all), so a cut lands in a pause rather than in one quiet frame inside a vowel.
constexpr int64_t quiet_smoothing_radius = 2;

int64_t seconds_to_samples(double s) { return static_cast<int64_t>(std::llround(s * model_sample_rate)); }

float smoothed_energy(std::span<const vad_frame> frames, int64_t k) {
  const int64_t lo = std::max<int64_t>(0, k - quiet_smoothing_radius);
  const int64_t hi = std::min<int64_t>(static_cast<int64_t>(frames.size()) - 1, k + quiet_smoothing_radius);
  float sum = 0;
  for (int64_t j = lo; j <= hi; ++j) sum += frames[static_cast<std::size_t>(j)].energy_db;
  return sum / static_cast<float>(hi - lo + 1);
}

// The quietest frame boundary in samples [lo, hi]; hi when no frame lies there.
int64_t quietest_between(std::span<const vad_frame> frames, int64_t lo, int64_t hi) {
  const int64_t first = (lo + vad_hop_samples - 1) / vad_hop_samples;
  const int64_t last = std::min<int64_t>(hi / vad_hop_samples, static_cast<int64_t>(frames.size()) - 1);
  int64_t best = hi;
  float best_db = std::numeric_limits<float>::infinity();
  for (int64_t k = first; k <= last; ++k) {
    const float db = smoothed_energy(frames, k);
    if (db < best_db) {
      best_db = db;
      best = k * vad_hop_samples;
    }
  }
  return best;
}

}  // namespace

std::vector<segment> group_regions(std::span<const speech_region> regions, std::span<const vad_frame> frames,
                                   const config::segment_config& cfg) {
  const int64_t min_len = seconds_to_samples(cfg.min_s);
  const int64_t max_len = seconds_to_samples(cfg.max_s);
  std::vector<segment> out;
  if (regions.empty()) return out;

  segment current{regions.front().start_sample, regions.front().start_sample};
  for (const speech_region& r : regions) {
    if (r.end_sample - current.start_sample > max_len && current.end_sample > current.start_sample) {
      out.push_back(current);
      current = {r.start_sample, r.start_sample};
    }
    current.end_sample = r.end_sample;
    // Too long even alone: cut between min_s and max_s, and where possible leave min_s for the
    // rest, so a region of 1.1 * max_s becomes two even halves rather than max_s and a sliver.
    while (current.end_sample - current.start_sample > max_len) {
      const int64_t lo = current.start_sample + min_len;
      int64_t hi = current.start_sample + max_len;
      if (current.end_sample - min_len >= lo) hi = std::min(hi, current.end_sample - min_len);
      const int64_t cut = quietest_between(frames, lo, hi);
      out.push_back({current.start_sample, cut});
      current.start_sample = cut;
    }
  }
  out.push_back(current);
  return out;
}

result<std::vector<segment>> slice(std::span<const float> samples16k, const config::vad_config& vad_cfg,
                                   const config::segment_config& segment_cfg) {
  if (auto problem = config::section_problem(segment_cfg); !problem.empty())
    return fail(errc::invalid_config, "segment: " + problem);
  auto analysis = analyze_speech(samples16k, vad_cfg);
  if (!analysis) return tl::unexpected(analysis.error());
  return group_regions(analysis->regions, analysis->frames, segment_cfg);
}

}  // namespace sluice::dsp
