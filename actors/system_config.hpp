#pragma once
/// The CAF configuration of an engine's actor system: every message type registered by name
/// (so any actor can live in another process behind the middleman), scheduler threads from
/// [engine] scheduler_threads.

#include <caf/all.hpp>

#include "actors/messages.hpp"

namespace sluice::actors {

class engine_system_config : public caf::actor_system_config {
 public:
  /// threads 0: CAF's default (one per core). poll_sleep_us < 0: CAF's default (50 µs) between
  /// an idle scheduler thread's moderate polls for work.
  explicit engine_system_config(int threads = 0, int poll_sleep_us = -1);
};

}  // namespace sluice::actors
