#pragma once
/// metrics_actor: every actor of the engine reports its figures here every [engine] report_ms
/// (actor_report). The metrics actor keeps the latest per actor and running totals per kind
/// and per tenant (`tenants`: the live channels, counters and latencies of the reports that
/// name a tenant, i.e. each tenant's streams; net/auth/tenant_view.hpp shows a tenant its own
/// in place of the engine's), and builds one JSON document from them taken at one point of its mailbox, so a snapshot is
/// consistent: every figure in it comes from the same set of reports. It publishes that
/// document on a snapshot_board when it starts and every `publish_ms` after, so readers never
/// wait on it (a reader sees figures at most `publish_ms` plus one report old).
///
/// Messages:
///   (actor_report)                   from any actor
///   (snapshot_atom) -> std::string   a snapshot built now (also published); for callers that
///                                    need the newest figures and may wait (the CLI, benches)
///   (report_atom)                    timer: publish

#include <caf/all.hpp>

#include <memory>
#include <string>

#include "actors/actor_types.hpp"
#include "actors/snapshot_board.hpp"

namespace sluice::actors {

/// `engine_name` names the engine in every snapshot. (It is also why the function takes an
/// argument at all: CAF 0.17 dereferences a null argument tuple when spawning a function that
/// takes only `self`, which UBSan reports.)
/// A typed actor (metrics_actor_type): what it takes and answers is checked by the compiler.
metrics_actor_type::behavior_type metrics_actor(metrics_actor_type::pointer self, std::string engine_name,
                                                std::shared_ptr<snapshot_board> board, int publish_ms);

}  // namespace sluice::actors
