#include "actors/spillway_actor.hpp"

#include <chrono>
#include <numeric>

#include <spdlog/spdlog.h>

namespace sluice::actors {

namespace {

// What the spillway holds: the replicas and every expert of the shards it stands in for.
std::vector<uint8_t> held_mask(const spillway_state& st) {
  const auto& arch = st.res->model->arch();
  auto held = st.replicated;
  for (int l = 0; l < arch.n_layers; ++l)
    for (int32_t e = 0; e < arch.n_routed; ++e)
      if (st.standin[static_cast<std::size_t>(st.res->placement.shard_of(l, e))])
        held[static_cast<std::size_t>(l * arch.n_routed + e)] = 1;
  return held;
}

result<void> reshard(spillway_state& st) {
  auto shard = moe::expert_shard::of_experts(*st.res->model, held_mask(st), st.res->compute);
  if (!shard) return tl::unexpected(shard.error());
  st.runner->reshard(std::move(*shard));
  return {};
}

}  // namespace

spillway_actor_type::behavior_type spillway_actor(spillway_pointer self, std::shared_ptr<const engine_resources> res,
                                                  int32_t index, metrics_actor_type metrics) {
  const auto& arch = res->model->arch();
  const auto n_experts = static_cast<std::size_t>(int64_t{arch.n_layers} * arch.n_routed);
  // Holding nothing until the batcher announces its hot set (an all-zero mask always fits).
  auto& st = self->state;
  st.res = res;
  st.n_shards = res->placement.n_shards();
  st.runner.emplace(*moe::expert_shard::of_experts(*res->model, std::vector<uint8_t>(n_experts, 0), res->compute),
                    arch.n_layers, arch.n_routed);
  st.meter = actor_meter("spillway/" + std::to_string(index), "spillway");
  st.metrics = std::move(metrics);
  st.index = index;
  st.replicated.assign(n_experts, 0);
  st.standin.assign(static_cast<std::size_t>(st.n_shards), 0);
  if (res->cfg.engine.preallocate) st.runner->preallocate(arch, res->largest_block_pairs());
  if (st.metrics) self->send(self, report_atom::value);
  return {
      [self](block_atom, block_msg& m) -> caf::result<reply_msg> {
        auto& st = self->state;
        actor_meter::scope busy(st.meter);
        const int32_t shard = m.block ? m.block->shard : st.n_shards;
        const bool failover = shard >= 0 && shard < st.n_shards;
        if (failover && !st.standin[static_cast<std::size_t>(shard)]) {
          // Standing in for a shard whose expert actor failed: take over its experts.
          st.standin[static_cast<std::size_t>(shard)] = 1;
          if (auto ok = reshard(st); !ok) return caf::make_error(caf::sec::invalid_argument, ok.error().message);
          spdlog::info("spillway/{}: standing in for expert shard {}", st.index, shard);
        }
        const auto pairs = m.block ? m.block->n_pairs() : 0;
        if (auto ok = st.runner->run(m); !ok) return caf::make_error(caf::sec::invalid_argument, ok.error().message);
        st.meter.count(failover ? "failover_pairs" : "spilled_pairs", static_cast<double>(pairs));
        st.meter.count("bytes_in", static_cast<double>(m.wire_bytes()));
        return reply_msg{m.reply};
      },
      [self](hot_atom, const std::vector<uint8_t>& replicated) {
        auto& st = self->state;
        if (replicated.size() != st.replicated.size()) {
          spdlog::warn("spillway/{}: a hot set of {} entries for {} experts; ignored", st.index, replicated.size(),
                       st.replicated.size());
          return;
        }
        st.replicated = replicated;
        if (auto ok = reshard(st); !ok) spdlog::warn("spillway/{}: {}", st.index, ok.error().message);
      },
      [self](report_atom) {
        auto& st = self->state;
        st.meter.gauge("replicas",
                       static_cast<double>(std::accumulate(st.replicated.begin(), st.replicated.end(), int64_t{0})));
        st.meter.gauge("held_experts", static_cast<double>(st.runner->shard().n_held()));
        st.meter.gauge("standin_shards",
                       static_cast<double>(std::accumulate(st.standin.begin(), st.standin.end(), int64_t{0})));
        st.meter.gauge("buffer_growths", static_cast<double>(st.runner->growths()));
        self->send(st.metrics, st.meter.take(static_cast<int64_t>(self->mailbox().size())));
        self->delayed_send(self, std::chrono::milliseconds(st.res->cfg.engine.report_ms), report_atom::value);
      },
  };
}

}  // namespace sluice::actors
