// Compiled, not run, by the ctest entries actors/typed: a lane ... (tests/CMakeLists.txt): with no
// macro, what a channel (features), the supervisor (shards, drops) and a lane itself (its timers)
// send to compute_actor_type (actors/actor_types.hpp), which must compile; WRONG_PAYLOAD sends a
// lane raw samples where it takes a feature_chunk (a channel's messages sent to a lane by
// mistake); WRONG_CHANNEL drops a channel by a string. Each must fail to compile with CAF's own
// diagnostic for it (the tests match its text).
#include <string>
#include <vector>

#include "actors/actor_types.hpp"

namespace sluice::actors {

void use_compute(caf::event_based_actor* self, const compute_actor_type& lane) {
#if defined(WRONG_PAYLOAD)
  self->send(lane, features_atom::value, std::vector<float>{});
#elif defined(WRONG_CHANNEL)
  self->send(lane, drop_atom::value, std::string("7"));
#else
  self->send(lane, features_atom::value, feature_chunk{});
  self->send(lane, shards_atom::value, std::vector<block_sink_actor>{}, std::vector<spillway_actor_type>{});
  self->send(lane, drop_atom::value, channel_id{7});
  self->send(lane, flush_atom::value);
  self->send(lane, report_atom::value);
#endif
}

}  // namespace sluice::actors
