#pragma once
/// A whole audio file held in memory (an HTTP upload) through the engine: every channel a
/// channel, as in `sluice transcribe`, answered as one JSON document once every channel has
/// drained. What net/ serves as POST /v1/transcribe.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "actors/engine.hpp"

namespace sluice::actors {

/// Decodes `body` (WAV, Ogg Opus), cuts it, and sends it through the engine; `done(status,
/// json)` is called once (from an actor thread) with 200 and the transcript, or 4xx/5xx and
/// {"error": ...}.
/// A headerless body: its sample encoding ("pcm_s16le", "mulaw", "alaw", "pcm_f32le"), rate and
/// interleaved channel count.
struct raw_audio_format {
  std::string encoding = "pcm_s16le";
  int sample_rate = 0;
  int channels = 1;
};

/// With `raw` unset the body must be a WAV or Ogg Opus file.
void start_file_job(engine& e, std::string body, std::function<void(int, std::string)> done,
                    const std::optional<raw_audio_format>& raw = std::nullopt);

}  // namespace sluice::actors
