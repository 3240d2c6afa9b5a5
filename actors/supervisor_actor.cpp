#include "actors/supervisor_actor.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <caf/scheduler/test_coordinator.hpp>
#include <spdlog/spdlog.h>

#include "actors/actor_meter.hpp"
#include "actors/batcher_actor.hpp"
#include "actors/channel_actor.hpp"
#include "actors/cpu_affinity.hpp"
#include "actors/expert_actor.hpp"
#include "actors/spillway_actor.hpp"

namespace sluice::actors {

namespace {

struct supervisor {
  std::shared_ptr<const engine_resources> res;
  metrics_actor_type metrics;
  std::vector<expert_actor_type> experts;
  std::vector<spillway_actor_type> spillways;
  compute_actor_type batcher;  // lane mode: lanes[0]
  // Lane mode ([engine] lanes > 0): the lanes and each lane's queue wait.
  std::vector<compute_actor_type> lanes;
  std::vector<double> lane_wait_ms;
  // Where channels place each utterance: the lanes, or the batcher alone. Shared with them.
  std::shared_ptr<lane_set> compute;
  std::map<channel_id, channel_actor_type> channels;
  // Channels opened for a file (channel_request::offline): whoever feeds them their file (a
  // segment feeder) sends their end, after its last segment.
  std::set<channel_id> file_channels;
  channel_id next_channel = 1;
  double queue_wait_ms = 0;
  bool draining = false;
  std::vector<caf::typed_response_promise<bool>> drain_waiters;
  actor_meter meter{"supervisor", "supervisor"};
};

using self_ptr = supervisor_actor_type::pointer;

using state_ptr = std::shared_ptr<supervisor>;

expert_actor_type spawn_expert(self_ptr self, const state_ptr& st, int32_t shard) {
  auto a = st->res->cfg.engine.dedicated_expert_threads
               ? self->spawn<caf::detached>(expert_actor, st->res, shard, st->metrics)
               : self->spawn(expert_actor, st->res, shard, st->metrics);
  self->monitor(a);
  return a;
}

spillway_actor_type spawn_spillway(self_ptr self, const state_ptr& st, int32_t i) {
  auto a = self->spawn(spillway_actor, st->res, i, st->metrics);
  self->monitor(a);
  return a;
}

// The shard handles as the batcher takes them: each expert as a block sink.
void send_shards(self_ptr self, const state_ptr& st, const compute_actor_type& batcher) {
  self->send(batcher, shards_atom::value, std::vector<block_sink_actor>(st->experts.begin(), st->experts.end()),
             st->spillways);
}

compute_actor_type spawn_batcher(self_ptr self, const state_ptr& st) {
  auto a = self->spawn(batcher_actor, st->res, st->metrics, caf::actor_cast<supervisor_actor_type>(self));
  self->monitor(a);
  send_shards(self, st, a);
  return a;
}

// Each lane on its own thread: lanes are the engine's compute, one per core. Under CAF's
// deterministic test coordinator (tests/actors/lane_kill_test.cpp) a lane is a scheduled actor
// like every other, so that the test decides the order of every message.
// With [engine] pin_lanes and one lane per allowed core, lane i is pinned to the i-th core (a
// restarted lane to the same one).
compute_actor_type spawn_lane(self_ptr self, const state_ptr& st, std::size_t i, std::size_t lanes) {
  const bool deterministic = dynamic_cast<caf::scheduler::test_coordinator*>(&self->system().scheduler()) != nullptr;
  const auto cpu = static_cast<int32_t>(
      st->res->cfg.engine.pin_lanes ? lane_cpu(static_cast<int>(i), static_cast<int>(lanes), allowed_cpus()) : -1);
  auto a = deterministic ? self->spawn(lane_actor, st->res, st->metrics, caf::actor_cast<supervisor_actor_type>(self),
                                       static_cast<int32_t>(i), int32_t{-1})
                         : self->spawn<caf::detached>(lane_actor, st->res, st->metrics,
                                                      caf::actor_cast<supervisor_actor_type>(self), static_cast<int32_t>(i), cpu);
  self->monitor(a);
  return a;
}

// Compute actor `index` (a lane, or the batcher as 0), `dead`, is now `a`: the lane_set places
// new utterances on it, and every channel hears which actor died, so that those with an
// utterance on it report it lost (by the dead actor's address: a lane restarted twice before a
// channel reads the first notice must not cost an utterance already on the newest one).
void replace_compute(self_ptr self, const state_ptr& st, std::size_t index, const caf::actor_addr& dead,
                     const compute_actor_type& a) {
  st->compute->set(index, a);
  for (auto& [id, ch] : st->channels) self->send(ch, batcher_atom::value, static_cast<int32_t>(index), dead);
}

void check_drained(const state_ptr& st) {
  if (!st->draining || !st->channels.empty()) return;
  for (auto& rp : st->drain_waiters) rp.deliver(true);
  st->drain_waiters.clear();
}

// Frees channel `id`'s slot: every compute actor drops its state (its utterances may have run
// on any lane). A channel that is no longer registered (released when it drained, then down) is
// left alone.
void release_channel(self_ptr self, const state_ptr& st, channel_id id) {
  auto it = st->channels.find(id);
  if (it == st->channels.end()) return;
  for (std::size_t i = 0; i < st->compute->size(); ++i) self->send(st->compute->at(i), drop_atom::value, id);
  st->channels.erase(it);
  st->file_channels.erase(id);
  check_drained(st);
}

}  // namespace

supervisor_actor_type::behavior_type supervisor_actor(supervisor_actor_type::pointer self,
                                                      std::shared_ptr<const engine_resources> res,
                                                      metrics_actor_type metrics, int lanes,
                                                      std::vector<double> lane_speeds) {
  auto st = std::make_shared<supervisor>();
  st->res = res;
  st->metrics = metrics;
  if (lanes > 0) {
    const auto k = static_cast<std::size_t>(lanes);
    st->compute = std::make_shared<lane_set>(k, res->cfg.engine.lane_decoding, std::move(lane_speeds));
    for (std::size_t i = 0; i < k; ++i) {
      st->lanes.push_back(spawn_lane(self, st, i, k));
      st->compute->set(i, st->lanes.back());
    }
    st->lane_wait_ms.assign(k, 0.0);
    st->batcher = st->lanes.front();
  } else {
    for (int32_t s = 0; s < res->placement.n_shards(); ++s) st->experts.push_back(spawn_expert(self, st, s));
    for (int32_t i = 0; i < res->cfg.engine.spillways; ++i) st->spillways.push_back(spawn_spillway(self, st, i));
    st->batcher = spawn_batcher(self, st);
    st->compute = lane_set::of(st->batcher);
  }
  // Children are monitored, not linked: a child that dies, even killed outright, never takes
  // the supervisor with it; the down handler restarts it. When the supervisor stops (the
  // engine shutting down), it stops every child.
  self->attach_functor([st](const caf::error&) {
    for (auto& a : st->experts) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    for (auto& a : st->spillways) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(st->batcher, caf::exit_reason::user_shutdown);
    for (auto& a : st->lanes) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    for (auto& [id, ch] : st->channels) caf::anon_send_exit(ch, caf::exit_reason::user_shutdown);
  });
  self->set_down_handler([self, st](caf::down_msg& dm) {
    const bool failed = dm.reason && dm.reason != caf::exit_reason::normal;
    for (std::size_t s = 0; s < st->experts.size(); ++s)
      if (st->experts[s].address() == dm.source) {
        if (st->draining && !failed) return;
        spdlog::warn("supervisor: expert/{} went down ({}); restarting it", s, self->system().render(dm.reason));
        st->experts[s] = spawn_expert(self, st, static_cast<int32_t>(s));
        st->meter.count("restarts");
        send_shards(self, st, st->batcher);
        return;
      }
    for (std::size_t i = 0; i < st->spillways.size(); ++i)
      if (st->spillways[i].address() == dm.source) {
        spdlog::warn("supervisor: spillway/{} went down ({}); restarting it", i, self->system().render(dm.reason));
        st->spillways[i] = spawn_spillway(self, st, static_cast<int32_t>(i));
        st->meter.count("restarts");
        send_shards(self, st, st->batcher);
        return;
      }
    for (std::size_t i = 0; i < st->lanes.size(); ++i)
      if (st->lanes[i].address() == dm.source) {
        if (st->draining && !failed) return;
        spdlog::warn("supervisor: lane/{} went down ({}); restarting it", i, self->system().render(dm.reason));
        st->lanes[i] = spawn_lane(self, st, i, st->lanes.size());
        if (i == 0) st->batcher = st->lanes[0];
        st->meter.count("restarts");
        replace_compute(self, st, i, dm.source, st->lanes[i]);
        return;
      }
    if (st->batcher.address() == dm.source) {
      spdlog::warn("supervisor: the batcher went down ({}); restarting it", self->system().render(dm.reason));
      st->batcher = spawn_batcher(self, st);
      st->meter.count("restarts");
      replace_compute(self, st, 0, dm.source, st->batcher);
      return;
    }
    // A channel that drained was released already (drained_atom); one that failed is released now.
    for (auto it = st->channels.begin(); it != st->channels.end(); ++it)
      if (it->second.address() == dm.source) {
        if (failed) {
          spdlog::warn("supervisor: channel {} failed ({})", it->first, self->system().render(dm.reason));
          st->meter.count("channel_failures");
        }
        release_channel(self, st, it->first);
        return;
      }
  });
  self->send(self, report_atom::value);
  return {
      [self, st](open_atom, channel_request& req, caf::actor subscriber) -> open_reply {
        auto refuse = [&](refusal code, std::string why) {
          st->meter.count("refused");
          spdlog::info("supervisor: channel refused ({}): {}", to_string(code), why);
          return open_reply{false, std::move(why), 0, {}, code};
        };
        const auto& cfg = st->res->cfg.engine;
        if (st->draining) return refuse(refusal::shutting_down, "the engine is shutting down");
        if (static_cast<int>(st->channels.size()) >= cfg.max_channels)
          return refuse(refusal::overloaded, "engine full: " + std::to_string(st->channels.size()) +
                                                 " channels open (engine.max_channels = " +
                                                 std::to_string(cfg.max_channels) + ")");
        if (st->queue_wait_ms > cfg.max_queue_wait_ms)
          return refuse(refusal::overloaded,
                        "engine overloaded: ready audio waits " + std::to_string(static_cast<int>(st->queue_wait_ms)) +
                            " ms for the batcher (engine.max_queue_wait_ms = " +
                            std::to_string(cfg.max_queue_wait_ms) + ")");
        auto pipe = channel_pipeline::create(*st->res, req);
        if (!pipe) return refuse(refusal_of(pipe.error().code), pipe.error().message);
        const channel_id id = st->next_channel++;
        // An offline channel runs on a thread of its own, which it puts at [engine] offline_nice,
        // so its fbank and decoding take the CPU only when live channels and lanes leave it.
        auto p = std::make_shared<channel_pipeline>(std::move(*pipe));
        auto ch = req.offline && cfg.offline_nice > 0
                      ? self->spawn<caf::detached>(channel_actor, st->res, id, std::move(p), req.partials, req.tenant,
                                                   subscriber, st->compute, st->metrics,
                                                   caf::actor_cast<supervisor_actor_type>(self))
                      : self->spawn(channel_actor, st->res, id, std::move(p), req.partials, req.tenant, subscriber,
                                    st->compute, st->metrics, caf::actor_cast<supervisor_actor_type>(self));
        self->monitor(ch);
        st->channels.emplace(id, ch);
        if (req.offline) st->file_channels.insert(id);
        st->meter.count("opened");
        return open_reply{true, {}, id, ch};
      },
      [self, st](drain_atom) -> caf::result<bool> {
        st->draining = true;
        if (st->channels.empty()) return true;
        // A live channel ends with the audio it has; a file channel with its file: its segments
        // may still be on the way from its feeder (found by the VAD as it goes), and an end now
        // would let it drain, and its job answer, before the rest of the file came.
        for (auto& [id, ch] : st->channels)
          if (!st->file_channels.count(id)) self->send(ch, end_atom::value);
        auto rp = self->make_response_promise<bool>();
        st->drain_waiters.push_back(rp);
        return rp;
      },
      [self, st](abort_atom) -> int64_t {
        // The drain ran out of time (engine::shutdown): every channel still open stops now. High
        // priority, so that the abort overtakes audio already queued in a channel's mailbox
        // (a client that sent faster than real time can have queued hours of it).
        for (auto& [id, ch] : st->channels) self->send<caf::message_priority::high>(ch, abort_atom::value);
        spdlog::warn("drain timed out: {} channels aborted", st->channels.size());
        return static_cast<int64_t>(st->channels.size());
      },
      [st](shards_atom) -> caf::result<std::vector<expert_actor_type>, std::vector<spillway_actor_type>, caf::actor> {
        return {st->experts, st->spillways, caf::actor_cast<caf::actor>(st->batcher)};
      },
      [self, st](load_atom, double wait_ms) {
        if (st->lanes.empty()) {
          st->queue_wait_ms = wait_ms;
          return;
        }
        // Lanes: admission looks at the most loaded one.
        for (std::size_t i = 0; i < st->lanes.size(); ++i)
          if (st->lanes[i].address() == self->current_sender()) st->lane_wait_ms[i] = wait_ms;
        st->queue_wait_ms = *std::max_element(st->lane_wait_ms.begin(), st->lane_wait_ms.end());
      },
      [self, st](drained_atom, channel_id id) {
        // The channel tells the supervisor before its subscriber, so its slot is free before the
        // subscriber can ask for another (a file transcriber opening the next file's channel was
        // refused as "engine full" when the slot waited for the channel's down message).
        release_channel(self, st, id);
      },
      [self, st](report_atom) {
        st->meter.gauge("channels", static_cast<double>(st->channels.size()));
        st->meter.gauge("queue_wait_ms", st->queue_wait_ms);
        // Work outstanding on each lane (lane_set: frames claimed by the utterances placed there).
        for (std::size_t i = 0; i < st->lanes.size(); ++i)
          st->meter.gauge("lane_load_frames/" + std::to_string(i), static_cast<double>(st->compute->load(i)));
        if (st->metrics) self->send(st->metrics, st->meter.take(static_cast<int64_t>(self->mailbox().size())));
        self->delayed_send(self, std::chrono::milliseconds(st->res->cfg.engine.report_ms), report_atom::value);
      },
  };
}

}  // namespace sluice::actors
