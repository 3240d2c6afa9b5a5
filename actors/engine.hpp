#pragma once
/// One running engine: its actor system, the metrics actor and the supervisor (which owns the
/// experts, spillways, batcher and channels). The blocking calls here are for callers outside
/// the actor world (the CLI, tests, the network layer's start-up); actors talk to the
/// supervisor directly.

#include <caf/all.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "actors/actor_types.hpp"
#include "actors/engine_resources.hpp"
#include "actors/messages.hpp"
#include "actors/snapshot_board.hpp"
#include "actors/system_config.hpp"
#include "actors/upload_queue.hpp"
#include "config/error.hpp"
#include "moe/placement/placement_plan.hpp"

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
  /// The metrics snapshot the metrics actor last published (JSON; at most [engine] report_ms
  /// plus one report old). Never waits on an actor: safe on network I/O threads.
  std::string snapshot() const;
  /// A snapshot built now by the metrics actor ("" if it does not answer within `timeout`).
  /// Blocks: for the CLI, benchmarks and tests that need the newest figures, never for I/O threads.
  std::string fresh_snapshot(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  /// Graceful shutdown: new channels are refused, every open channel finishes the audio it has
  /// accepted and delivers its finals. True when all drained within `timeout`; otherwise the
  /// channels still open are aborted (their remaining audio and results are dropped), so that
  /// the engine can always be destroyed.
  bool shutdown(std::chrono::milliseconds timeout = std::chrono::seconds(60));

  caf::actor_system& system() { return system_; }
  supervisor_actor_type supervisor() const { return supervisor_; }
  metrics_actor_type metrics() const { return metrics_; }
  /// Rereads the tenant directory now (as the watcher does every postproc.tenants_poll_ms);
  /// returns how many files failed (-1: the watcher did not answer). Blocks.
  int64_t reload_tenants();
  const engine_resources& resources() const { return *res_; }
  /// The placement plan chosen at start ([engine] placement_probe_ms), served at GET /v1/placement.
  const moe::placement_plan& placement() const { return plan_; }
  /// Lanes this engine runs (0: the batcher and expert actors): [engine] lanes, or the plan's
  /// count when that is -1.
  int lanes() const { return lanes_; }
  /// Uploads (whole files) as jobs: see upload_queue.hpp.
  upload_queue& uploads() { return *uploads_; }

 private:
  explicit engine(std::shared_ptr<const engine_resources> res);

  std::shared_ptr<const engine_resources> res_;
  engine_system_config config_;
  caf::actor_system system_;
  moe::placement_plan plan_;
  int lanes_ = 0;
  std::shared_ptr<snapshot_board> board_ = std::make_shared<snapshot_board>();
  metrics_actor_type metrics_;
  supervisor_actor_type supervisor_;
  caf::actor tenant_watcher_;
  std::unique_ptr<upload_queue> uploads_;
  bool drained_ = false;
};

}  // namespace sluice::actors
