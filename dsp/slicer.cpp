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

// The grouping itself. `last_open`: the last region has not ended yet; its end_sample is as far
// as it is known to reach (it may reach further). Returns the segments and how many of them are
// final: the same whatever the open region's true end and whatever regions follow. Without
// `last_open` every segment but the trailing one is final (a later region may join it).
struct grouping {
  std::vector<segment> segments;
  std::size_t final_count = 0;
};

grouping group(std::span<const speech_region> regions, std::span<const vad_frame> frames,
               const config::segment_config& cfg, bool last_open) {
  const int64_t min_len = seconds_to_samples(cfg.min_s);
  const int64_t max_len = seconds_to_samples(cfg.max_s);
  grouping g;
  if (regions.empty()) return g;
  // Whether every pushed segment so far is final; false from the first that is not.
  bool settled = true;
  auto push = [&](segment s, bool final_now) {
    g.segments.push_back(s);
    settled = settled && final_now;
    if (settled) g.final_count = g.segments.size();
  };

  segment current{regions.front().start_sample, regions.front().start_sample};
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const speech_region& r = regions[i];
    const bool open = last_open && i + 1 == regions.size();
    // Monotone in r's end: true for its known end, true for any later one.
    if (r.end_sample - current.start_sample > max_len && current.end_sample > current.start_sample) {
      push(current, true);
      current = {r.start_sample, r.start_sample};
    }
    current.end_sample = r.end_sample;
    // Too long even alone: cut between min_s and max_s, and where possible leave min_s for the
    // rest, so a region of 1.1 * max_s becomes two even halves rather than max_s and a sliver.
    while (current.end_sample - current.start_sample > max_len) {
      const int64_t lo = current.start_sample + min_len;
      int64_t hi = current.start_sample + max_len;
      // The region's end limits the cut only while it lies within min_s of max_s: an open
      // region's cut is final once its known end is past that.
      const bool end_limits = current.end_sample - min_len < hi;
      if (current.end_sample - min_len >= lo) hi = std::min(hi, current.end_sample - min_len);
      const int64_t cut = quietest_between(frames, lo, hi);
      // Every frame the cut was judged on (smoothing included) must have been measured.
      const bool frames_known = hi / vad_hop_samples + quiet_smoothing_radius < static_cast<int64_t>(frames.size());
      push({current.start_sample, cut}, !(open && end_limits) && frames_known);
      current.start_sample = cut;
    }
  }
  push(current, false);
  return g;
}

}  // namespace

std::vector<segment> group_regions(std::span<const speech_region> regions, std::span<const vad_frame> frames,
                                   const config::segment_config& cfg) {
  return group(regions, frames, cfg, false).segments;
}

result<segment_stream> segment_stream::create(const config::vad_config& vad_cfg,
                                              const config::segment_config& segment_cfg) {
  if (auto problem = config::section_problem(segment_cfg); !problem.empty())
    return fail(errc::invalid_config, "segment: " + problem);
  auto detector = vad::create(vad_cfg);
  if (!detector) return tl::unexpected(detector.error());
  return segment_stream(std::move(*detector), segment_cfg);
}

segment_stream::segment_stream(vad detector, const config::segment_config& cfg)
    : vad_(std::move(detector)), cfg_(cfg) {}

void segment_stream::take(vad_output&& out) {
  frames_.insert(frames_.end(), out.frames.begin(), out.frames.end());
  for (const vad_event& e : out.events) {
    if (e.kind == vad_event_kind::speech_start) {
      open_start_ = e.sample;
    } else {
      regions_.push_back({open_start_, e.sample});
      open_start_ = -1;
    }
  }
}

std::vector<segment> segment_stream::emit(bool finished) {
  // Nothing new to judge: the VAD measured no frame since the last grouping (events come with
  // frames only).
  if (!finished && frames_.size() == grouped_frames_) return {};
  grouped_frames_ = frames_.size();
  std::vector<speech_region> regions = regions_;
  const bool open = !finished && open_start_ >= 0;
  // An open region is given the least end it can have: whatever is final with that end is final
  // with its true one (see group()).
  if (open) regions.push_back({open_start_, std::max(open_start_, vad_.open_region_end_bound())});
  auto g = group(regions, frames_, cfg_, open);
  const std::size_t ready = finished ? g.segments.size() : g.final_count;
  g.segments.resize(ready);
  if (ready == 0) return g.segments;
  // What was given out is never grouped again: the grouping resumes where the last final segment
  // ends, inside the region it cut or at the next region's start, exactly as it would have gone
  // on over the whole recording. So each accept() groups only the regions not yet given out.
  const int64_t resume = g.segments.back().end_sample;
  std::size_t drop = 0;
  while (drop < regions_.size() && regions_[drop].end_sample <= resume) ++drop;
  regions_.erase(regions_.begin(), regions_.begin() + static_cast<std::ptrdiff_t>(drop));
  if (!regions_.empty()) regions_.front().start_sample = std::max(regions_.front().start_sample, resume);
  else if (open_start_ >= 0) open_start_ = std::max(open_start_, resume);
  return g.segments;
}

std::vector<segment> segment_stream::accept(std::span<const float> samples16k) {
  take(vad_.accept(samples16k));
  return emit(false);
}

std::vector<segment> segment_stream::finish() {
  take(vad_.finish());
  return emit(true);
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
