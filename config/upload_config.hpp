#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [upload]: whole files sent to the engine (POST /v1/transcribe). Uploads are jobs: the network
/// thread hands the body over and a bounded queue of them is decoded by worker actors of their
/// own, never on the I/O threads. What one upload may cost is read from its headers first.
struct upload_config {
  /// Worker actors (each on its own thread) that decode, resample and cut uploads.
  int workers = 1;
  /// Uploads accepted at once beyond one per worker (waiting, decoding or being transcribed);
  /// past it an upload is refused with 503 and Retry-After.
  int queue_depth = 4;
  /// Longest upload (s of audio per channel), read from its headers before decoding; past it 413.
  int max_seconds = 3600;
  /// Most audio in one upload summed over its channels (s): bounds the decoded samples held
  /// (16 kHz float: 64 kB per channel-second); past it 413.
  int max_channel_seconds = 7200;
  /// Share of engine.max_channels one upload may open; a file with more channels gets 413.
  double channel_share = 0.25;
  /// Share of engine.max_channels the concurrent uploads of one client address may hold; past it 429.
  double client_channel_share = 0.5;
  /// Seconds a refused client is told to wait (Retry-After) on 429 and 503.
  int retry_after_s = 5;

  template <class V>
  void visit(V&& v) {
    v("workers", workers, range{1, 256}, "upload decoding worker actors");
    v("queue_depth", queue_depth, range{0, 100000}, "uploads accepted beyond one per worker");
    v("max_seconds", max_seconds, range{1, 7 * 86400}, "longest upload (s per channel, from its headers)");
    v("max_channel_seconds", max_channel_seconds, range{1, 1000000},
      "most audio in one upload summed over channels (s)");
    v("channel_share", channel_share, range{0.0, 1.0}, "share of engine.max_channels one upload may open");
    v("client_channel_share", client_channel_share, range{0.0, 1.0},
      "share of engine.max_channels one client's concurrent uploads may hold");
    v("retry_after_s", retry_after_s, range{1, 3600}, "Retry-After on 429 and 503 (s)");
  }
  std::string check() const { return {}; }
};

}  // namespace sluice::config
