#include "actors/engine.hpp"

#include <spdlog/spdlog.h>

#include "actors/metrics_actor.hpp"
#include "actors/placement_probe.hpp"
#include "actors/supervisor_actor.hpp"
#include "actors/tenant_watcher.hpp"
#include "kernels/cpu/gemm.hpp"

namespace sluice::actors {

namespace {
// How long the supervisor has to answer an abort of every channel after a drain timed out.
constexpr auto abort_wait = std::chrono::seconds(5);

// The plan from the start-up benchmark; should the probe measure nothing (every step failed),
// the nominal plan, with a warning. With an explicit lane count ([engine] lanes >= 0) the plan
// chooses nothing on one CPU, so the probe is skipped (its budget is start-up time of every
// `sluice transcribe`) and the plan is the nominal one.
moe::placement_plan choose_placement(const engine_resources& res) {
  const std::chrono::milliseconds budget(res.cfg.engine.lanes < 0 ? res.cfg.engine.placement_probe_ms : 0);
  const auto cache = probe_cache::user_default(res.cfg.engine.placement_cache_hours);
  if (auto plan = plan_this_machine(*res.recognizer, budget, cache)) return std::move(*plan);
  else spdlog::warn("placement: the probe failed ({}); using the nominal plan", plan.error().message);
  return *plan_this_machine(*res.recognizer, std::chrono::milliseconds(0));
}

}  // namespace

engine::engine(std::shared_ptr<const engine_resources> res)
    : res_(std::move(res)), config_(res_->cfg.engine.scheduler_threads, res_->cfg.engine.scheduler_poll_sleep_us),
      system_(config_) {
  // Lanes are the engine's parallelism: each runs its micro-batches' dense layers on its own
  // thread, through OpenBLAS where the kernels pick it (AVX2 machines: moe/compute.cpp). Left
  // at its default (a thread per core), every lane's sgemm fans out over every core and the
  // lanes' calls contend for OpenBLAS's one thread pool. Measured on a 2-core AVX2 machine (the
  // placement probe, frames/s): 35-44k on one core and 35-43k on both (so the plan chose one
  // lane) with the default, 50k and 83-97k (two lanes) with one BLAS thread. Process-wide; the
  // batcher mode (lanes = 0, dense layers on one actor) keeps OpenBLAS's own threads.
  if (res_->cfg.engine.lanes != 0) kernels::cpu::set_blas_threads(1);
  plan_ = choose_placement(*res_);
  lanes_ = res_->cfg.engine.lanes < 0 ? plan_.n_lanes() : res_->cfg.engine.lanes;
  spdlog::info("placement: {}; running {}", describe(plan_),
               lanes_ > 0 ? std::to_string(lanes_) + " lanes" : std::string("the batcher and expert actors"));
  metrics_ = system_.spawn(metrics_actor, std::string("sluice"), board_, res_->cfg.engine.report_ms);
  // The plan's lanes carry their measured speeds; a configured lane count other than the
  // plan's makes them all equal.
  std::vector<double> lane_speeds;
  if (lanes_ == plan_.n_lanes())
    for (const auto& l : plan_.lanes) lane_speeds.push_back(l.speed);
  supervisor_ = system_.spawn(supervisor_actor, res_, metrics_, lanes_, std::move(lane_speeds));
  tenant_watcher_ = system_.spawn(tenant_watcher, res_);
  uploads_ = std::make_unique<upload_queue>(system_, supervisor_, res_->cfg);
  // The board is empty until the metrics actor first publishes, which it does asynchronously:
  // a /v1/actors or /metrics request right after start would then find nothing (503). Ask once
  // here, on the starting thread (never a network one), so that snapshot() has a state from the
  // moment start() returns.
  if (board_->latest()->empty()) {
    auto first = fresh_snapshot(std::chrono::seconds(5));
    if (!first.empty()) board_->publish_first(std::move(first));
  }
}

std::unique_ptr<engine> engine::start(std::shared_ptr<const engine_resources> res) {
  return std::unique_ptr<engine>(new engine(std::move(res)));
}

engine::~engine() {
  uploads_.reset();
  if (!drained_) shutdown(std::chrono::seconds(10));
  caf::anon_send_exit(supervisor_, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(metrics_, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(tenant_watcher_, caf::exit_reason::user_shutdown);
}

int64_t engine::reload_tenants() {
  caf::scoped_actor self{system_};
  int64_t errors = -1;
  self->request(tenant_watcher_, std::chrono::seconds(10), reload_atom::value)
      .receive([&](int64_t n) { errors = n; }, [&](caf::error&) {});
  return errors;
}

open_reply engine::open(const channel_request& req, const caf::actor& subscriber) {
  caf::scoped_actor self{system_};
  open_reply out{false, "the supervisor did not answer", 0, {}, refusal::unavailable};
  self->request(supervisor_, std::chrono::seconds(10), open_atom::value, req, subscriber)
      .receive([&](open_reply& r) { out = std::move(r); },
               [&](caf::error& e) { out.reason = "open failed: " + system_.render(e); });
  return out;
}

std::string engine::snapshot() const { return *board_->latest(); }

std::string engine::fresh_snapshot(std::chrono::milliseconds timeout) {
  caf::scoped_actor self{system_};
  std::string out;
  self->request(metrics_, timeout, snapshot_atom::value)
      .receive([&](std::string& s) { out = std::move(s); }, [&](caf::error&) {});
  return out;
}

bool engine::shutdown(std::chrono::milliseconds timeout) {
  caf::scoped_actor self{system_};
  bool ok = false;
  self->request(supervisor_, timeout, drain_atom::value).receive([&](bool b) { ok = b; }, [&](caf::error&) {});
  if (!ok) {
    // What has not drained in time is aborted, or the actor system could not stop (it waits
    // for every actor) while a channel works through a backlog. The supervisor answers at
    // once; the channels quit when they next take a message.
    self->request<caf::message_priority::high>(supervisor_, abort_wait, abort_atom::value)
        .receive([](int64_t) {}, [](caf::error&) {});
  }
  drained_ = true;
  return ok;
}

}  // namespace sluice::actors
