#include "actors/spillway_actor.hpp"

#include <chrono>
#include <numeric>

#include "actors/actor_meter.hpp"
#include "actors/block_runner.hpp"

namespace sluice::actors {

caf::behavior spillway_actor(caf::event_based_actor* self, std::shared_ptr<const engine_resources> res, int32_t index,
                             caf::actor metrics) {
  const auto& arch = res->model->arch();
  struct state {
    block_runner runner;
    actor_meter meter;
    int32_t n_shards;
    int64_t replicas = 0;
  };
  auto st = std::make_shared<state>(state{block_runner(moe::expert_shard::all_experts(*res->model, res->compute),
                                                       arch.n_layers, arch.n_routed),
                                          actor_meter("spillway/" + std::to_string(index), "spillway"),
                                          res->placement.n_shards()});
  if (metrics) self->send(self, report_atom::value);
  const int report_ms = res->cfg.engine.report_ms;
  return {
      [=](block_atom, block_msg& m) -> caf::result<reply_msg> {
        actor_meter::scope busy(st->meter);
        const bool failover = m.block && m.block->shard != st->n_shards;
        const auto pairs = m.block ? m.block->n_pairs() : 0;
        if (auto ok = st->runner.run(m); !ok) return caf::make_error(caf::sec::invalid_argument, ok.error().message);
        st->meter.count(failover ? "failover_pairs" : "spilled_pairs", static_cast<double>(pairs));
        st->meter.count("bytes_in", static_cast<double>(m.wire_bytes()));
        return reply_msg{m.reply};
      },
      [=](hot_atom, const std::vector<uint8_t>& replicated) {
        st->replicas = std::accumulate(replicated.begin(), replicated.end(), int64_t{0});
      },
      [=](report_atom) {
        st->meter.gauge("replicas", static_cast<double>(st->replicas));
        st->meter.gauge("buffer_growths", static_cast<double>(st->runner.growths()));
        self->send(metrics, st->meter.take(static_cast<int64_t>(self->mailbox().size())));
        self->delayed_send(self, std::chrono::milliseconds(report_ms), report_atom::value);
      },
  };
}

}  // namespace sluice::actors
