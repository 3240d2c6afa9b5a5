#include "actors/engine.hpp"

#include "actors/metrics_actor.hpp"
#include "actors/supervisor_actor.hpp"
#include "actors/tenant_watcher.hpp"

namespace sluice::actors {

namespace {
// How long the supervisor has to answer an abort of every channel after a drain timed out.
constexpr auto abort_wait = std::chrono::seconds(5);
}  // namespace

engine::engine(std::shared_ptr<const engine_resources> res)
    : res_(std::move(res)), config_(res_->cfg.engine.scheduler_threads), system_(config_) {
  metrics_ = system_.spawn(metrics_actor, std::string("sluice"));
  supervisor_ = system_.spawn(supervisor_actor, res_, metrics_);
  tenant_watcher_ = system_.spawn(tenant_watcher, res_);
  uploads_ = std::make_unique<upload_queue>(system_, supervisor_, res_->cfg);
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
  open_reply out{false, "the supervisor did not answer", 0, {}};
  self->request(supervisor_, std::chrono::seconds(10), open_atom::value, req, subscriber)
      .receive([&](open_reply& r) { out = std::move(r); },
               [&](caf::error& e) { out.reason = "open failed: " + system_.render(e); });
  return out;
}

std::string engine::snapshot(std::chrono::milliseconds timeout) {
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
