#pragma once
/// Uploads as jobs on the engine, off the network threads, in bounded numbers.
///
/// submit() only counts the upload and hands it over (the body is moved, never copied); a full
/// queue refuses at once with 503 and Retry-After. A dispatcher actor on its own thread reads
/// each upload's headers (nothing decoded yet) and refuses what is too long or has too many
/// channels (413) or would take its client past its share of engine channels (429, Retry-After);
/// then one of [upload] workers worker actors (each on its own thread) decodes it piece by piece
/// straight to 16 kHz within the header's length, cuts it, and starts its transcription
/// (file_job.hpp). The client's answer comes when the transcript is done.
///
/// Bounds: at most workers + queue_depth uploads are held at once (from submit to answer); each
/// holds its body (<= server.max_body_bytes) and at most upload.max_channel_seconds of 16 kHz
/// float samples (64 kB per channel-second), plus the copies of its segments on their way to
/// the channels.

#include <functional>
#include <memory>

#include <caf/all.hpp>

#include "actors/actor_types.hpp"
#include "actors/upload_job.hpp"
#include "config/sluice_config.hpp"

namespace sluice::actors {

/// The limits of config [upload] applied to engine.max_channels.
struct upload_limits {
  int capacity = 0;              ///< uploads held at once: workers + queue_depth
  int workers = 0;
  int channels_per_upload = 0;   ///< at least 1
  int channels_per_client = 0;   ///< at least channels_per_upload
  int max_seconds = 0;
  int max_channel_seconds = 0;
  int retry_after_s = 0;

  static upload_limits from(const config::sluice_config& cfg);
};

class upload_queue {
 public:
  /// Spawns the dispatcher and the workers in `sys`; transcriptions open channels at `supervisor`.
  upload_queue(caf::actor_system& sys, supervisor_actor_type supervisor, const config::sluice_config& cfg);
  /// Stops the dispatcher and its workers (an upload being decoded finishes first).
  ~upload_queue();
  upload_queue(const upload_queue&) = delete;
  upload_queue& operator=(const upload_queue&) = delete;

  /// Takes the upload, or refuses it at once (done(503) on the caller's thread) when full.
  /// Thread-safe; cheap enough for a network thread (a counter and a mailbox enqueue).
  void submit(upload_request req);

  /// Uploads taken and not yet answered.
  int in_flight() const;
  const upload_limits& limits() const { return limits_; }

  /// For tests: every worker calls `hook` (on its own thread) before it decodes an upload, so a
  /// test can hold a worker busy and release it with an explicit signal. Set it before the
  /// first submit.
  void set_before_decode(std::function<void()> hook);

  struct shared;  ///< what submit, the done wrappers and the workers share (atomics, the hook)

 private:
  upload_limits limits_;
  std::shared_ptr<shared> shared_;
  caf::actor dispatcher_;
};

}  // namespace sluice::actors
