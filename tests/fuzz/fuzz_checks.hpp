#pragma once
/// What every fuzz target checks beyond "no crash, no sanitizer report": the contracts the
/// parsers' headers promise about their results. A broken contract aborts, so libFuzzer saves the
/// input as a crash like any other.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/error.hpp"
#include "dsp/audio.hpp"

namespace sluice::fuzz {

/// Aborts with `what` when `ok` is false.
inline void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz contract broken: %s\n", what);
  std::abort();
}

/// Every error carries a message for its sender (the headers promise errors that "name the
/// problem"); an empty message would reach a client as a bare status.
inline void require_message(const error& e) { require(!e.message.empty(), "error without a message"); }

/// dsp/audio.hpp's contract: a positive rate, all channels equally long, samples finite and in
/// [-1, 1].
inline void require_valid_audio(const dsp::audio& a) {
  require(a.sample_rate > 0, "audio with a non-positive sample rate");
  for (const auto& ch : a.channels) {
    require(ch.size() == a.num_samples(), "channels of different lengths");
    for (float v : ch) require(std::isfinite(v) && v >= -1.0f && v <= 1.0f, "sample outside [-1, 1]");
  }
}

}  // namespace sluice::fuzz
