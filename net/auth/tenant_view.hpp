#pragma once
/// What of the engine's metrics snapshot (actors/metrics_actor.hpp) a principal may see:
/// channel entries carry a stream's latest text and its tenant, so a tenant sees only its own
/// channels; the other actors (batcher, experts, ...) and the totals carry no text and stay.
/// Admin keys and the anonymous principal (no keys configured) see everything.

#include <string>

#include "net/auth/principal.hpp"

namespace sluice::net::auth {

/// `snapshot_json` with the channels `who` may not see removed. A document that does not parse
/// is returned as an empty object's text ("{}"): nothing of it can be vouched for.
std::string snapshot_for(const std::string& snapshot_json, const principal& who);

}  // namespace sluice::net::auth
