// Compiled, not run, by the ctest entries actors/typed:* (tests/CMakeLists.txt): what the typed
// interfaces of actors/actor_types.hpp let through the compiler. With no macro this is the
// batcher's own use (a block in, a reply_msg handler) and must compile; WRONG_PAYLOAD sends a
// block sink something that is not a block; WRONG_REPLY takes its reply as logits. Each of
// those must fail to compile, with CAF's own diagnostic for it (the tests match its text).
#include "actors/actor_types.hpp"

namespace sluice::actors {

void use_block_sink(caf::event_based_actor* self, const block_sink_actor& sink) {
#if defined(WRONG_PAYLOAD)
  self->request(sink, caf::infinite, block_atom::value, std::string("not a block"));
#elif defined(WRONG_REPLY)
  self->request(sink, caf::infinite, block_atom::value, block_msg{}).then([](logits_chunk&) {});
#else
  self->request(sink, caf::infinite, block_atom::value, block_msg{}).then([](reply_msg&) {});
#endif
}

}  // namespace sluice::actors
