#pragma once
/// Utterance endpointing for live streams, on top of dsp::vad.
///
/// An utterance starts where the VAD's speech starts. VAD speech regions separated by less than
/// trailing_silence_ms belong to one utterance; it ends at the end of its last region once that
/// much silence has followed. An utterance that reaches max_utterance_ms is cut: at the quietest
/// frame (lowest smoothed band energy) of its last cut_search_ms, provided speech follows that
/// frame, and a new utterance starts at the cut.
///
/// Positions are 16 kHz sample indices from the start of the stream. Events come in order,
/// start/end paired; an event's sample may lie in the past of the call that reports it (the VAD
/// confirms speech late, and a silence is known only once it has lasted). Results do not depend on
/// how the samples are split into accept() calls. Not thread-safe; one object per stream.

#include <cstdint>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "config/vad_config.hpp"
#include "dsp/vad.hpp"

namespace sluice::dsp {

enum class endpoint_kind { utterance_start, utterance_end };

/// Why an utterance ended (none for a start).
enum class end_reason { none, trailing_silence, max_length, end_of_stream };

struct endpoint_event {
  endpoint_kind kind = endpoint_kind::utterance_start;
  int64_t sample = 0;  ///< 16 kHz sample index of the boundary
  end_reason reason = end_reason::none;
  bool operator==(const endpoint_event&) const = default;
};

class endpointer {
 public:
  /// errc::invalid_config when either section is out of range or fails its check().
  static result<endpointer> create(const config::vad_config& vad_cfg,
                                   const config::endpoint_config& endpoint_cfg);

  /// Feeds the next samples (16 kHz mono, [-1, 1]); returns the boundaries decided by them.
  std::vector<endpoint_event> accept(std::span<const float> samples);

  /// Ends the stream: an open utterance ends at its last speech (end_of_stream). Resets the
  /// endpointer for a new stream.
  std::vector<endpoint_event> finish();

  /// True between an utterance's start event and its end event.
  bool in_utterance() const { return in_utterance_; }

 private:
  endpointer(vad detector, const config::endpoint_config& cfg);
  void consume(const vad_output& out, std::vector<endpoint_event>& events);
  void on_frame(int64_t frame, const vad_frame& f);
  void on_vad_event(const vad_event& e, std::vector<endpoint_event>& events);
  void check_limits(int64_t now_sample, std::vector<endpoint_event>& events);
  int64_t quietest_cut(int64_t now_sample) const;
  void reset();

  vad vad_;
  int64_t trailing_silence_samples_ = 0;
  int64_t max_utterance_samples_ = 0;
  int64_t cut_search_frames_ = 0;

  bool in_utterance_ = false;
  bool speech_open_ = false;     ///< a VAD region is open
  int64_t utterance_start_ = 0;  ///< sample
  int64_t speech_end_ = 0;       ///< end sample of the latest closed VAD region
  int64_t last_active_frame_ = -1;

  /// Band energy (dB) of the latest frames, enough to search for a cut: a ring indexed by frame.
  std::vector<float> recent_energy_db_;
  int64_t frames_seen_ = 0;
};

}  // namespace sluice::dsp
