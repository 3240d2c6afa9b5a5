#include "dsp/endpointer.hpp"

#include <algorithm>
#include <limits>

#include "dsp/audio.hpp"

namespace sluice::dsp {
namespace {

constexpr int64_t samples_per_ms = model_sample_rate / 1000;
// Cut candidates are judged by band energy averaged over this many frames either side (so the
// cut lands in a pause, not in one quiet frame inside a vowel).
constexpr int64_t quiet_smoothing_radius = 2;

}  // namespace

result<endpointer> endpointer::create(const config::vad_config& vad_cfg,
                                      const config::endpoint_config& endpoint_cfg) {
  if (auto problem = config::section_problem(endpoint_cfg); !problem.empty())
    return fail(errc::invalid_config, "endpoint: " + problem);
  auto detector = vad::create(vad_cfg);
  if (!detector) return tl::unexpected(detector.error());
  return endpointer(std::move(*detector), endpoint_cfg);
}

endpointer::endpointer(vad detector, const config::endpoint_config& cfg)
    : vad_(std::move(detector)),
      trailing_silence_samples_(cfg.trailing_silence_ms * samples_per_ms),
      max_utterance_samples_(cfg.max_utterance_ms * samples_per_ms),
      cut_search_frames_(cfg.cut_search_ms * samples_per_ms / vad_hop_samples) {
  reset();
}

void endpointer::reset() {
  in_utterance_ = false;
  speech_open_ = false;
  utterance_start_ = 0;
  speech_end_ = 0;
  last_active_frame_ = -1;
  recent_energy_db_.assign(static_cast<std::size_t>(cut_search_frames_ + 2 * quiet_smoothing_radius + 1),
                           0.0f);
  frames_seen_ = 0;
}

std::vector<endpoint_event> endpointer::accept(std::span<const float> samples) {
  std::vector<endpoint_event> events;
  consume(vad_.accept(samples), events);
  return events;
}

std::vector<endpoint_event> endpointer::finish() {
  std::vector<endpoint_event> events;
  consume(vad_.finish(), events);
  if (in_utterance_) events.push_back({endpoint_kind::utterance_end, speech_end_, end_reason::end_of_stream});
  reset();
  return events;
}

void endpointer::consume(const vad_output& out, std::vector<endpoint_event>& events) {
  // VAD events are replayed at the frame that decided them, so the silence and length checks see
  // exactly what a frame-by-frame caller would, whatever the chunking.
  std::size_t next_event = 0;
  for (std::size_t i = 0; i < out.frames.size(); ++i) {
    const int64_t frame = out.first_frame + static_cast<int64_t>(i);
    on_frame(frame, out.frames[i]);
    while (next_event < out.events.size() && out.events[next_event].decided_at_frame <= frame)
      on_vad_event(out.events[next_event++], events);
    check_limits((frame + 1) * vad_hop_samples, events);
  }
  // What finish() closes is decided after the last frame.
  while (next_event < out.events.size()) on_vad_event(out.events[next_event++], events);
}

void endpointer::on_frame(int64_t frame, const vad_frame& f) {
  const auto ring = static_cast<int64_t>(recent_energy_db_.size());
  recent_energy_db_[static_cast<std::size_t>(frame % ring)] = f.energy_db;
  if (f.active) last_active_frame_ = frame;
  frames_seen_ = frame + 1;
}

void endpointer::on_vad_event(const vad_event& e, std::vector<endpoint_event>& events) {
  if (e.kind == vad_event_kind::speech_start) {
    speech_open_ = true;
    if (!in_utterance_) {
      in_utterance_ = true;
      utterance_start_ = e.sample;
      events.push_back({endpoint_kind::utterance_start, e.sample, end_reason::none});
    }
    return;
  }
  speech_open_ = false;
  speech_end_ = e.sample;
}

void endpointer::check_limits(int64_t now_sample, std::vector<endpoint_event>& events) {
  if (!in_utterance_) return;
  if (!speech_open_ && now_sample - speech_end_ >= trailing_silence_samples_) {
    events.push_back({endpoint_kind::utterance_end, speech_end_, end_reason::trailing_silence});
    in_utterance_ = false;
    return;
  }
  if (now_sample - utterance_start_ < max_utterance_samples_) return;
  if (!speech_open_) {
    // The speech has already ended; waiting for the trailing silence cannot keep it under the
    // limit if more speech follows, so it ends where it is.
    events.push_back({endpoint_kind::utterance_end, speech_end_, end_reason::max_length});
    in_utterance_ = false;
    return;
  }
  const int64_t cut = quietest_cut(now_sample);
  events.push_back({endpoint_kind::utterance_end, cut, end_reason::max_length});
  events.push_back({endpoint_kind::utterance_start, cut, end_reason::none});
  utterance_start_ = cut;
}

int64_t endpointer::quietest_cut(int64_t now_sample) const {
  const auto ring = static_cast<int64_t>(recent_energy_db_.size());
  const int64_t oldest_kept = std::max<int64_t>(0, frames_seen_ - ring);
  // Candidates: the last cut_search_ms, after the utterance's first frame and no later than its
  // latest speech frame, so that speech follows the cut and the new utterance is not empty.
  const int64_t lo = std::max({frames_seen_ - cut_search_frames_, utterance_start_ / vad_hop_samples + 1,
                               oldest_kept + quiet_smoothing_radius});
  const int64_t hi = std::min(frames_seen_ - 1, last_active_frame_);
  if (lo > hi) return now_sample;
  int64_t best = hi;
  float best_db = std::numeric_limits<float>::infinity();
  for (int64_t k = lo; k <= hi; ++k) {
    float sum = 0;
    int64_t n = 0;
    for (int64_t j = k - quiet_smoothing_radius; j <= std::min(k + quiet_smoothing_radius, frames_seen_ - 1); ++j) {
      sum += recent_energy_db_[static_cast<std::size_t>(j % ring)];
      ++n;
    }
    const float mean = sum / static_cast<float>(n);
    if (mean < best_db) {
      best_db = mean;
      best = k;
    }
  }
  return best * vad_hop_samples;
}

}  // namespace sluice::dsp
