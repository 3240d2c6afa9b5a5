#pragma once
/// One running engine: its actor system, the metrics actor and the supervisor (which owns the
/// experts, spillways, batcher and channels). The blocking calls here are for callers outside
/// the actor world (the CLI, tests, the network layer's start-up); actors talk to the
/// supervisor directly.

#include <caf/all.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "actors/engine_resources.hpp"
#include "actors/messages.hpp"
#include "actors/system_config.hpp"
#include "actors/upload_queue.hpp"
#include "config/error.hpp"

namespace sluice::actors {

class engine {
 public:
  /// Starts the actors for `res`. The CAF system uses [engine] scheduler_threads.
  static std::unique_ptr<engine> start(std::shared_ptr<const engine_resources> res);
  /// Drains (see shutdown) unless already done, then stops the actor system.
  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  /// Opens a channel whose results go to `subscriber` (refused: open_reply::ok false and the
  /// reason). Blocks until the supervisor answers.
  open_reply open(const channel_request& req, const caf::actor& subscriber);
  /// The metrics actor's JSON snapshot ("" if it does not answer within `timeout`).
  std::string snapshot(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// Graceful shutdown: new channels are refused, every open channel finishes the audio it has
  /// accepted and delivers its finals. True when all drained within `timeout`; otherwise the
  /// channels still open are aborted (their remaining audio and results are dropped), so that
  /// the engine can always be destroyed.
  bool shutdown(std::chrono::milliseconds timeout = std::chrono::seconds(60));

  caf::actor_system& system() { return system_; }
  caf::actor supervisor() const { return supervisor_; }
  caf::actor metrics() const { return metrics_; }
  /// Rereads the tenant directory now (as the watcher does every postproc.tenants_poll_ms);
  /// returns how many files failed (-1: the watcher did not answer). Blocks.
  int64_t reload_tenants();
  const engine_resources& resources() const { return *res_; }
  /// Uploads (whole files) as jobs: see upload_queue.hpp.
  upload_queue& uploads() { return *uploads_; }

 private:
  explicit engine(std::shared_ptr<const engine_resources> res);

  std::shared_ptr<const engine_resources> res_;
  engine_system_config config_;
  caf::actor_system system_;
  caf::actor metrics_, supervisor_, tenant_watcher_;
  std::unique_ptr<upload_queue> uploads_;
  bool drained_ = false;
};

}  // namespace sluice::actors
