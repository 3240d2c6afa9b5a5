// Compiled, not run, by the ctest entries actors/typed: the supervisor ... (tests/CMakeLists.txt):
// with no macro, what the engine, the network front ends, file jobs, channels and lanes send to
// supervisor_actor_type (actors/actor_types.hpp), which must compile; WRONG_PAYLOAD asks it to
// open a channel with a string where it takes a channel_request; WRONG_REPLY takes the answer to
// an open as a bool. Each must fail to compile with CAF's own diagnostic for it (the tests match
// its text).
#include <string>
#include <vector>

#include "actors/actor_types.hpp"

namespace sluice::actors {

void use_supervisor(caf::event_based_actor* self, const supervisor_actor_type& sup) {
#if defined(WRONG_PAYLOAD)
  self->request(sup, caf::infinite, open_atom::value, std::string("mono"), caf::actor{}).then([](open_reply&) {});
#elif defined(WRONG_REPLY)
  self->request(sup, caf::infinite, open_atom::value, channel_request{}, caf::actor{}).then([](bool) {});
#else
  self->request(sup, caf::infinite, open_atom::value, channel_request{}, caf::actor{}).then([](open_reply&) {});
  self->request(sup, caf::infinite, drain_atom::value).then([](bool) {});
  self->request(sup, caf::infinite, abort_atom::value).then([](int64_t) {});
  self->request(sup, caf::infinite, shards_atom::value)
      .then([](std::vector<expert_actor_type>&, std::vector<spillway_actor_type>&, caf::actor&) {});
  self->send(sup, drained_atom::value, channel_id{3});
  self->send(sup, load_atom::value, 12.5);
#endif
}

}  // namespace sluice::actors
