// Compiled, not run, by the ctest entries actors/typed: a channel ... (tests/CMakeLists.txt): with
// no macro, what a network session or file job (audio, samples, segments, end, abort, progress),
// a lane (logits), the supervisor (a restarted lane) and the channel itself (its report timer)
// send to channel_actor_type (actors/messages.hpp), which must compile; WRONG_PAYLOAD sends a
// channel encoded audio as text (a WebSocket text frame passed on by mistake); WRONG_SEGMENT sends
// a segment without its start sample. Each must fail to compile with CAF's own diagnostic for it
// (the tests match its text).
#include <cstdint>
#include <string>
#include <vector>

#include "actors/messages.hpp"

namespace sluice::actors {

void use_channel(caf::event_based_actor* self, const channel_actor_type& ch) {
#if defined(WRONG_PAYLOAD)
  self->send(ch, audio_atom::value, std::string("not audio"));
#elif defined(WRONG_SEGMENT)
  self->send(ch, segment_atom::value, std::vector<float>{});
#else
  self->send(ch, audio_atom::value, std::vector<uint8_t>{});
  self->send(ch, samples_atom::value, std::vector<float>{});
  self->send(ch, segment_atom::value, std::vector<float>{}, int64_t{0});
  self->send(ch, end_atom::value);
  self->send<caf::message_priority::high>(ch, abort_atom::value);
  self->send(ch, progress_atom::value);
  self->send(ch, logits_atom::value, logits_chunk{});
  self->send(ch, batcher_atom::value, int32_t{0}, caf::actor_addr{});
  self->send(ch, report_atom::value);
#endif
}

}  // namespace sluice::actors
