#include "actors/spillway_actor.hpp"

#include <chrono>
#include <numeric>

#include <spdlog/spdlog.h>

#include "actors/actor_meter.hpp"
#include "actors/block_runner.hpp"

namespace sluice::actors {

namespace {

struct spillway {
  std::shared_ptr<const engine_resources> res;
  block_runner runner;
  actor_meter meter;
  int32_t n_shards = 0;
  std::vector<uint8_t> replicated;  // u8 [n_layers, n_routed]: the batcher's hot set
  std::vector<uint8_t> standin;     // u8 [n_shards]: shards this spillway has stood in for
};

// What the spillway holds: the replicas and every expert of the shards it stands in for.
std::vector<uint8_t> held_mask(const spillway& st) {
  const auto& arch = st.res->model->arch();
  auto held = st.replicated;
  for (int l = 0; l < arch.n_layers; ++l)
    for (int32_t e = 0; e < arch.n_routed; ++e)
      if (st.standin[static_cast<std::size_t>(st.res->placement.shard_of(l, e))])
        held[static_cast<std::size_t>(l * arch.n_routed + e)] = 1;
  return held;
}

result<void> reshard(spillway& st) {
  auto shard = moe::expert_shard::of_experts(*st.res->model, held_mask(st), st.res->compute);
  if (!shard) return tl::unexpected(shard.error());
  st.runner.reshard(std::move(*shard));
  return {};
}

}  // namespace

caf::behavior spillway_actor(caf::event_based_actor* self, std::shared_ptr<const engine_resources> res, int32_t index,
                             caf::actor metrics) {
  const auto& arch = res->model->arch();
  const auto n_experts = static_cast<std::size_t>(int64_t{arch.n_layers} * arch.n_routed);
  // Holding nothing until the batcher announces its hot set (an all-zero mask always fits).
  const auto n_shards = res->placement.n_shards();
  auto nothing = *moe::expert_shard::of_experts(*res->model, std::vector<uint8_t>(n_experts, 0), res->compute);
  auto st = std::make_shared<spillway>(spillway{res, block_runner(std::move(nothing), arch.n_layers, arch.n_routed),
                                                actor_meter("spillway/" + std::to_string(index), "spillway"),
                                                n_shards, std::vector<uint8_t>(n_experts, 0),
                                                std::vector<uint8_t>(static_cast<std::size_t>(n_shards), 0)});
  if (res->cfg.engine.preallocate) st->runner.preallocate(arch, res->largest_block_pairs());
  if (metrics) self->send(self, report_atom::value);
  const int report_ms = res->cfg.engine.report_ms;
  return {
      [=](block_atom, block_msg& m) -> caf::result<reply_msg> {
        actor_meter::scope busy(st->meter);
        const int32_t shard = m.block ? m.block->shard : st->n_shards;
        const bool failover = shard >= 0 && shard < st->n_shards;
        if (failover && !st->standin[static_cast<std::size_t>(shard)]) {
          // Standing in for a shard whose expert actor failed: take over its experts.
          st->standin[static_cast<std::size_t>(shard)] = 1;
          if (auto ok = reshard(*st); !ok) return caf::make_error(caf::sec::invalid_argument, ok.error().message);
          spdlog::info("spillway/{}: standing in for expert shard {}", index, shard);
        }
        const auto pairs = m.block ? m.block->n_pairs() : 0;
        if (auto ok = st->runner.run(m); !ok) return caf::make_error(caf::sec::invalid_argument, ok.error().message);
        st->meter.count(failover ? "failover_pairs" : "spilled_pairs", static_cast<double>(pairs));
        st->meter.count("bytes_in", static_cast<double>(m.wire_bytes()));
        return reply_msg{m.reply};
      },
      [=](hot_atom, const std::vector<uint8_t>& replicated) {
        if (replicated.size() != st->replicated.size()) {
          spdlog::warn("spillway/{}: a hot set of {} entries for {} experts; ignored", index, replicated.size(),
                       st->replicated.size());
          return;
        }
        st->replicated = replicated;
        if (auto ok = reshard(*st); !ok) spdlog::warn("spillway/{}: {}", index, ok.error().message);
      },
      [=](report_atom) {
        st->meter.gauge("replicas",
                        static_cast<double>(std::accumulate(st->replicated.begin(), st->replicated.end(), int64_t{0})));
        st->meter.gauge("held_experts", static_cast<double>(st->runner.shard().n_held()));
        st->meter.gauge("standin_shards",
                        static_cast<double>(std::accumulate(st->standin.begin(), st->standin.end(), int64_t{0})));
        st->meter.gauge("buffer_growths", static_cast<double>(st->runner.growths()));
        self->send(metrics, st->meter.take(static_cast<int64_t>(self->mailbox().size())));
        self->delayed_send(self, std::chrono::milliseconds(report_ms), report_atom::value);
      },
  };
}

}  // namespace sluice::actors
