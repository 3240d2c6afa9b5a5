#pragma once
/// A subscriber for tests on CAF's test coordinator (no test framework in here: the doctest
/// suites and the CAF-DSL binary both use it). At `go` it asks the supervisor for `n` channels
/// with itself as their subscriber; it keeps the replies, every channel's finals (a lost
/// utterance's error final included) and the channels' drained notices.

#include <caf/all.hpp>

#include <map>
#include <memory>
#include <vector>

#include "actors/actor_types.hpp"
#include "actors/messages.hpp"

namespace sluice::test {

using go_atom = caf::atom_constant<caf::atom("go")>;

struct subscriber_log {
  std::vector<actors::open_reply> opened;
  std::map<actors::channel_id, std::vector<actors::transcript_event>> finals;
  std::vector<actors::channel_id> drained;
};

inline caf::behavior opening_subscriber(caf::event_based_actor* self, sluice::actors::supervisor_actor_type supervisor, int n,
                                        std::shared_ptr<subscriber_log> out) {
  using namespace sluice::actors;
  return {
      [=](go_atom) {
        for (int i = 0; i < n; ++i)
          self->request(supervisor, caf::infinite, open_atom::value, channel_request{}, caf::actor_cast<caf::actor>(self))
              .then([=](open_reply& r) { out->opened.push_back(std::move(r)); });
      },
      [=](transcript_event& ev) {
        if (ev.is_final) out->finals[ev.channel].push_back(std::move(ev));
      },
      [=](drained_atom, channel_id id) { out->drained.push_back(id); },
  };
}

}  // namespace sluice::test
