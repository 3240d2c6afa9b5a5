#pragma once
/// A whole audio file held in memory (an HTTP upload) through the engine: every channel a
/// channel, as in `sluice transcribe`, answered as one JSON document once every channel has
/// drained. What net/ serves as POST /v1/transcribe.

#include <functional>
#include <memory>
#include <string>

#include "actors/engine.hpp"

namespace sluice::actors {

/// Decodes `body` (WAV, Ogg Opus), cuts it, and sends it through the engine; `done(status,
/// json)` is called once (from an actor thread) with 200 and the transcript, or 4xx/5xx and
/// {"error": ...}.
void start_file_job(engine& e, std::string body, std::function<void(int, std::string)> done);

}  // namespace sluice::actors
