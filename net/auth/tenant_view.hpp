#pragma once
/// What of the engine's metrics snapshot (actors/metrics_actor.hpp) a principal may see.
///
///   admin, anonymous (no keys)   everything
///   metrics scope                the engine's figures: every actor but other tenants' streams,
///                                the engine's totals (`kinds`, `summary`) and every tenant's
///                                totals (`tenants`: channels, audio, finals, latencies; no
///                                text). The operator's monitoring scope, as for /metrics.
///   read only (a tenant)         its own streams and its own totals, in the places the engine's
///                                would be: `kinds.channel` and `summary` (channels_live, audio_s,
///                                finals, partials) are the tenant's, `tenants` holds only it;
///                                of the shared actors (lanes, batcher, experts, ...) only
///                                their health (name, kind, mailbox, busy): not their
///                                counters, gauges or message rates, nor the engine's report
///                                count, from which one tenant could read how much the others
///                                stream.
///
/// Channel entries carry a stream's latest text and its tenant: only that tenant (and admins)
/// see them. The document says which view it is: "view": "engine" or "tenant".

#include <string>

#include "net/auth/principal.hpp"

namespace sluice::net::auth {

/// `snapshot_json` as `who` may see it (above). A document that does not parse is returned as
/// an empty object's text ("{}"): nothing of it can be vouched for.
std::string snapshot_for(const std::string& snapshot_json, const principal& who);

}  // namespace sluice::net::auth
