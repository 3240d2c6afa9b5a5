#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [vad]: frame-level speech detection (dsp::vad).
struct vad_config {
  /// Speech needs this many dB above the adaptive noise floor.
  double threshold_db = 9.0;
  /// Speech continues this long after the last speech frame.
  int hangover_ms = 200;
  /// Speech shorter than this is discarded as a click.
  int min_speech_ms = 150;
  /// Silence shorter than this inside speech is bridged.
  int min_silence_ms = 300;

  template <class V>
  void visit(V&& v) {
    v("threshold_db", threshold_db, range{1, 40}, "dB above the noise floor that counts as speech");
    v("hangover_ms", hangover_ms, range{0, 2000}, "speech kept after the last speech frame");
    v("min_speech_ms", min_speech_ms, range{0, 5000}, "shorter speech is dropped");
    v("min_silence_ms", min_silence_ms, range{0, 5000}, "shorter pauses are bridged");
  }
  std::string check() const { return {}; }
};

/// [endpoint]: when a live utterance ends (dsp::endpointer).
struct endpoint_config {
  /// Trailing silence after speech that ends an utterance.
  int trailing_silence_ms = 800;
  /// An utterance is cut when it reaches this length.
  int max_utterance_ms = 20000;

  template <class V>
  void visit(V&& v) {
    v("trailing_silence_ms", trailing_silence_ms, range{100, 10000},
      "silence after speech that ends an utterance");
    v("max_utterance_ms", max_utterance_ms, range{1000, 120000}, "utterances are cut at this length");
  }
  std::string check() const { return {}; }
};

/// [segment]: offline slicing of long files into model-sized segments (dsp::slicer).
struct segment_config {
  double min_s = 8.0;
  double max_s = 15.0;

  template <class V>
  void visit(V&& v) {
    v("min_s", min_s, range{0.5, 60}, "segments are not cut shorter than this (s)");
    v("max_s", max_s, range{1, 120}, "segments are cut at the quietest point before this (s)");
  }
  std::string check() const {
    if (min_s >= max_s) return "min_s must be smaller than max_s";
    return {};
  }
};

}  // namespace sluice::config
