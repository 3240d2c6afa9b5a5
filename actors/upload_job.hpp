#pragma once
/// An upload (POST /v1/transcribe) as the network layer hands it to the engine's upload queue,
/// and the answer it gets back.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/messages.hpp"

namespace sluice::actors {

/// A headerless body: its sample encoding ("pcm_s16le", "mulaw", "alaw", "pcm_f32le"), rate
/// (Hz) and interleaved channel count.
struct raw_audio_format {
  std::string encoding = "pcm_s16le";
  int sample_rate = 0;
  int channels = 1;
};

/// The answer to one upload: an HTTP status, a JSON document (the transcript, or {"error": ...}
/// naming the problem or the limit), and for 429/503 how long to wait (s; 0: no Retry-After).
struct upload_reply {
  int status = 0;
  std::string body;
  int retry_after_s = 0;
  std::string call_id = {};  ///< the upload's call in the server's registry (net/calls follow_upload); may be empty
};

/// Who else follows an upload as it is transcribed (net/ makes it a call). Both optional; called
/// from the transcription's actor, before `done`: `started` once the file is decoded, with one
/// label per audio channel; `result` for each final (or lost utterance, error set) of channel c.
struct upload_observer {
  /// The file's bytes, on the worker's thread before they are decoded (a protocol that reports
  /// their hash computes it here, off the network threads).
  std::function<void(std::string_view body)> body;
  std::function<void(const std::vector<std::string>& labels)> started;
  std::function<void(std::size_t channel, const transcript_event& ev)> result;
};

/// One upload. `done` is called exactly once, from an actor's thread (or, for a refusal at the
/// door, from the caller of upload_queue::submit), never while a lock of ours is held.
struct upload_request {
  std::string body;                     ///< the file, moved in: never copied on the way
  std::optional<raw_audio_format> raw;  ///< unset: the body is a WAV or Ogg Opus file
  std::string client;                   ///< the client's address: its concurrent uploads share channels
  std::string tenant;                   ///< whose upload (auth); its channels carry it
  std::vector<std::string> hotwords;    ///< every channel's ("phrase" or "phrase weight")
  std::function<void(upload_reply)> done;
  upload_observer observer;
};

}  // namespace sluice::actors
