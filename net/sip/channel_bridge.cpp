#include "net/sip/channel_bridge.hpp"

#include <chrono>
#include <vector>

#include <spdlog/spdlog.h>

namespace sluice::net::sip {

namespace {

// Audio held while the engine opens the channel: 20 ms packets, so about 10 s. Opening takes
// milliseconds; past this the engine is stuck and the oldest audio is dropped.
constexpr std::size_t max_early_packets = 500;
constexpr auto open_timeout = std::chrono::seconds(10);

struct bridge_state {
  actors::channel_actor_type channel;
  bool open_answered = false, end_pending = false, done = false;
  std::vector<std::vector<uint8_t>> early;
  std::size_t early_dropped = 0;
};

void finish(caf::stateful_actor<bridge_state>* self, const bridge_args& a) {
  if (self->state.done) return;
  self->state.done = true;
  a.call->channel_done();
  self->quit();
}

caf::behavior bridge(caf::stateful_actor<bridge_state>* self, bridge_args a) {
  self->set_down_handler([self, a](caf::down_msg& dm) {
    if (dm.source == self->state.channel.address()) {
      if (dm.reason && dm.reason != caf::exit_reason::normal)
        spdlog::warn("sip call {} channel {}: the engine's channel failed", a.call->id(), a.channel_index);
      finish(self, a);
    }
  });
  self->request(a.supervisor, open_timeout, actors::open_atom::value, a.request, caf::actor_cast<caf::actor>(self))
      .then(
          [self, a](actors::open_reply& r) {
            auto& st = self->state;
            st.open_answered = true;
            if (a.on_open) a.on_open(r.ok, r.reason);
            if (!r.ok) {
              finish(self, a);
              return;
            }
            st.channel = r.handle;
            self->monitor(st.channel);
            for (auto& b : st.early) self->send(st.channel, actors::audio_atom::value, std::move(b));
            st.early.clear();
            if (st.end_pending) self->send(st.channel, actors::end_atom::value);
          },
          [self, a](caf::error& e) {
            self->state.open_answered = true;
            if (a.on_open) a.on_open(false, "the engine did not answer: " + self->system().render(e));
            finish(self, a);
          });
  return {
      [self](actors::audio_atom, std::vector<uint8_t>& bytes) {
        auto& st = self->state;
        if (st.channel) {
          self->send(st.channel, actors::audio_atom::value, std::move(bytes));
        } else if (!st.open_answered) {
          if (st.early.size() >= max_early_packets) {
            st.early.erase(st.early.begin());
            ++st.early_dropped;
          }
          st.early.push_back(std::move(bytes));
        }
      },
      [self](actors::end_atom) {
        auto& st = self->state;
        if (st.channel) self->send(st.channel, actors::end_atom::value);
        else st.end_pending = true;
      },
      [a](actors::transcript_event& ev) { a.call->registry().result(a.call->id(), a.channel_index, ev); },
      [self, a](actors::drained_atom, actors::channel_id) { finish(self, a); },
  };
}

}  // namespace

call_completion::call_completion(std::shared_ptr<calls::call_registry> registry, calls::call_id id, int channels)
    : registry_(std::move(registry)), id_(std::move(id)), remaining_(channels) {}

void call_completion::channel_done() {
  std::lock_guard lock(mu_);
  if (remaining_ > 0) --remaining_;
  end_if_done();
}

void call_completion::call_over(const std::string& reason) {
  std::lock_guard lock(mu_);
  if (!over_) reason_ = reason;
  over_ = true;
  end_if_done();
}

void call_completion::end_if_done() {
  if (ended_ || !over_ || remaining_ > 0) return;
  ended_ = true;
  registry_->end(id_, reason_);
}

caf::actor spawn_channel_bridge(caf::actor_system& sys, bridge_args args) {
  return sys.spawn(bridge, std::move(args));
}

}  // namespace sluice::net::sip
