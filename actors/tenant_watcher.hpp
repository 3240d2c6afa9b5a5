#pragma once
/// tenant_watcher: rereads the tenant directory (engine_resources::tenants) every
/// postproc.tenants_poll_ms, so edited tenant files take effect without a restart. It logs what
/// changed and every file that failed (the failed tenant keeps its previous version).
///
/// Messages in:
///   (reload_atom) -> (int64_t errors)  reload now and answer with the number of failed files
///                                      (tests and tools use it instead of waiting for a poll)
/// It polls only when a directory is configured.

#include <caf/all.hpp>

#include <memory>

#include "actors/engine_resources.hpp"

namespace sluice::actors {

caf::behavior tenant_watcher(caf::event_based_actor* self, std::shared_ptr<const engine_resources> res);

}  // namespace sluice::actors
