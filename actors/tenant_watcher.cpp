#include "actors/tenant_watcher.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

#include "actors/messages.hpp"

namespace sluice::actors {

namespace {

int64_t reload_now(const engine_resources& res) {
  const auto rep = res.tenants->reload();
  for (const auto& id : rep.loaded) spdlog::info("tenants: {} (re)loaded", id);
  for (const auto& id : rep.removed) spdlog::info("tenants: {} removed (its file is gone)", id);
  // The old version of a failed tenant stays in use: say so, with the file and line.
  for (const auto& e : rep.errors) spdlog::error("tenants: {} (previous version kept)", e.message);
  return static_cast<int64_t>(rep.errors.size());
}

}  // namespace

caf::behavior tenant_watcher(caf::event_based_actor* self, std::shared_ptr<const engine_resources> res) {
  const auto period = std::chrono::milliseconds(res->cfg.postproc.tenants_poll_ms);
  const bool polling = res->tenants && !res->tenants->dir().empty();
  if (polling) self->delayed_send(self, period, report_atom::value);
  return {
      [self, res, period](report_atom) {
        reload_now(*res);
        self->delayed_send(self, period, report_atom::value);
      },
      [res](reload_atom) -> int64_t { return res->tenants ? reload_now(*res) : 0; },
  };
}

}  // namespace sluice::actors
