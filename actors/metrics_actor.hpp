#pragma once
/// metrics_actor: every actor of the engine reports its figures here every [engine] report_ms
/// (actor_report). The metrics actor keeps the latest per actor and running totals per kind,
/// and answers snapshot requests with one JSON document taken at one point of its mailbox,
/// so a snapshot is consistent: every figure in it comes from the same set of reports.
///
/// Messages:
///   (actor_report)                   from any actor
///   (snapshot_atom) -> std::string   the JSON snapshot (see metrics_snapshot.md in README)

#include <caf/all.hpp>

#include <string>

namespace sluice::actors {

/// `engine_name` names the engine in every snapshot. (It is also why the function takes an
/// argument at all: CAF 0.17 dereferences a null argument tuple when spawning a function that
/// takes only `self`, which UBSan reports.)
caf::behavior metrics_actor(caf::event_based_actor* self, std::string engine_name);

}  // namespace sluice::actors
