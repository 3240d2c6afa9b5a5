// Compiled, not run, by the ctest entries actors/typed: the metrics actor ... (tests/CMakeLists.txt):
// with no macro, what every reporting actor and the engine do with metrics_actor_type
// (actors/actor_types.hpp) and must compile; WRONG_PAYLOAD sends it something that is not an
// actor_report; WRONG_REPLY takes its snapshot as a number. Each must fail to compile with CAF's
// own diagnostic for it (the tests match its text).
#include <string>

#include "actors/actor_types.hpp"

namespace sluice::actors {

void use_metrics(caf::event_based_actor* self, const metrics_actor_type& metrics) {
#if defined(WRONG_PAYLOAD)
  self->send(metrics, std::string("not a report"));
#elif defined(WRONG_REPLY)
  self->request(metrics, caf::infinite, snapshot_atom::value).then([](int64_t) {});
#else
  self->send(metrics, actor_report{});
  self->request(metrics, caf::infinite, snapshot_atom::value).then([](std::string&) {});
#endif
}

}  // namespace sluice::actors
