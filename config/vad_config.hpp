#pragma once
#include <string>
#include <string_view>
#include <type_traits>

#include "config/constraints.hpp"
#include "config/field.hpp"

namespace sluice::config {

/// [vad]: frame-level speech detection (dsp::vad). Frames are 10 ms; every duration here is
/// rounded to whole frames.
struct vad_config {
  /// Lowest frequency of the band whose energy is measured (Hz). 300 Hz keeps mains hum and the
  /// rumble of brown-ish noise out; telephone audio has nothing below it anyway.
  double band_low_hz = 300.0;
  /// Highest frequency of that band (Hz); 3400 Hz works for narrow-band (8 kHz) calls upsampled.
  double band_high_hz = 3400.0;
  /// Top of the high band (band_high_hz .. this, Hz) where fricatives and stop releases live.
  /// It only extends speech at its edges, as edge_threshold_db says; 0 turns it off.
  double high_band_top_hz = 7600.0;
  /// A frame is speech when its band energy is this many dB above the adaptive noise floor.
  double threshold_db = 7.0;
  /// A frame whose spectrum is peaky (voiced) needs only this many dB above the floor.
  double voiced_threshold_db = 3.0;
  /// Frames next to speech (before its first or after its last speech frame, up to
  /// max_edge_ms away) whose speech-band or high-band energy, averaged over 30 ms, is this many dB
  /// above that band's floor are joined to it: weak onsets and endings such as fading vowels,
  /// nasals, fricatives and stop releases.
  double edge_threshold_db = 3.0;
  /// How far speech may grow by edge frames on either side (ms).
  int max_edge_ms = 200;
  /// Spectral flatness (dB, <= 0) of the noise-whitened spectrum at or below which a frame
  /// counts as voiced. Stationary noise sits near -2.5 dB; vowels go far below -6 dB.
  double voiced_flatness_db = -5.0;
  /// How fast the noise floor may rise on frames that do not look like speech (dB per second).
  /// It falls fast, so it follows the quiet stretches; this bounds how soon a louder noise is
  /// learnt (a 10 dB step takes 10 dB / rate seconds).
  double floor_rise_db_per_s = 4.0;
  /// After this long without a voiced frame the floor jumps to the quietest frame of that
  /// stretch, so a louder noise (or noise after digital silence) is learnt at once (ms; 0 = off).
  int floor_relearn_ms = 1000;
  /// Frames quieter than this are never speech, whatever the floor (dB re full scale).
  double min_level_dbfs = -60.0;
  /// Speech regions start this long before their first speech frame (covers weak onsets).
  int preroll_ms = 40;
  /// Speech regions end this long after their last speech frame (covers weak endings).
  int hangover_ms = 60;
  /// Speech shorter than this (first to last speech frame) is discarded as a click.
  int min_speech_ms = 120;
  /// Speech needs at least this much voiced (peaky-spectrum, above voiced_threshold_db) sound;
  /// noise bursts, clicks and noise steps have none. Whispers have none either (0 = off).
  int min_voiced_ms = 30;
  /// Silence shorter than this between speech frames is bridged. Speech ends only after this
  /// much silence, so it is also the latency of a speech-end event.
  int min_silence_ms = 300;

  template <class V>
  void visit(V&& v) {
    v("band_low_hz", band_low_hz, range{0, 8000}, "lowest frequency of the measured band (Hz)");
    v("band_high_hz", band_high_hz, range{100, 8000}, "highest frequency of the measured band (Hz)");
    v("high_band_top_hz", high_band_top_hz, range{0, 8000},
      "top of the fricative band above band_high_hz that extends speech edges (Hz, 0 = off)");
    v("threshold_db", threshold_db, range{1, 40}, "dB above the noise floor that counts as speech");
    v("voiced_threshold_db", voiced_threshold_db, range{0, 40},
      "dB above the noise floor that counts as speech for a voiced (peaky) frame");
    v("edge_threshold_db", edge_threshold_db, range{0, 40},
      "dB above the noise floor that extends speech at its edges");
    v("max_edge_ms", max_edge_ms, range{0, 1000}, "how far edge frames may extend speech");
    v("voiced_flatness_db", voiced_flatness_db, range{-30, 0},
      "noise-whitened spectral flatness (dB) at or below which a frame is voiced");
    v("floor_rise_db_per_s", floor_rise_db_per_s, range{0.1, 60},
      "how fast the noise floor rises on non-speech frames (dB/s)");
    v("floor_relearn_ms", floor_relearn_ms, range{0, 10000},
      "without a voiced frame for this long, the floor jumps to the quietest frame (0 = off)");
    v("min_level_dbfs", min_level_dbfs, range{-120, 0}, "quieter frames are never speech (dBFS)");
    v("preroll_ms", preroll_ms, range{0, 1000}, "speech kept before the first speech frame");
    v("hangover_ms", hangover_ms, range{0, 2000}, "speech kept after the last speech frame");
    v("min_speech_ms", min_speech_ms, range{0, 5000}, "shorter speech is dropped");
    v("min_voiced_ms", min_voiced_ms, range{0, 1000}, "speech needs this much voiced sound");
    v("min_silence_ms", min_silence_ms, range{0, 5000}, "shorter pauses are bridged");
  }
  std::string check() const {
    if (band_low_hz >= band_high_hz) return "band_low_hz must be below band_high_hz";
    if (high_band_top_hz != 0 && high_band_top_hz <= band_high_hz)
      return "high_band_top_hz must be 0 or above band_high_hz";
    if (voiced_threshold_db > threshold_db) return "voiced_threshold_db must not exceed threshold_db";
    if (edge_threshold_db > threshold_db) return "edge_threshold_db must not exceed threshold_db";
    // A region's end is reported once min_silence_ms of silence is seen; the padding must fit in
    // that pause or two regions would overlap.
    if (preroll_ms + hangover_ms > min_silence_ms)
      return "preroll_ms + hangover_ms must not exceed min_silence_ms";
    return {};
  }
};

/// [endpoint]: when a live utterance ends (dsp::endpointer).
struct endpoint_config {
  /// Trailing silence after speech that ends an utterance.
  int trailing_silence_ms = 800;
  /// An utterance is cut when it reaches this length.
  int max_utterance_ms = 20000;
  /// A forced cut goes to the quietest point of this last stretch before max_utterance_ms.
  int cut_search_ms = 2000;

  template <class V>
  void visit(V&& v) {
    v("trailing_silence_ms", trailing_silence_ms, range{100, 10000},
      "silence after speech that ends an utterance");
    v("max_utterance_ms", max_utterance_ms, range{1000, 120000}, "utterances are cut at this length");
    v("cut_search_ms", cut_search_ms, range{0, 10000},
      "a forced cut goes to the quietest point of this last stretch");
  }
  std::string check() const {
    if (cut_search_ms >= max_utterance_ms) return "cut_search_ms must be below max_utterance_ms";
    return {};
  }
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
