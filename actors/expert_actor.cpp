#include "actors/expert_actor.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

namespace sluice::actors {

expert_actor_type::behavior_type expert_actor_for(expert_pointer self, std::shared_ptr<const moe::acoustic_model> model,
                                                  moe::expert_placement placement, int32_t shard, metrics_actor_type metrics,
                                                  int report_ms, int64_t preallocate_pairs, moe::compute_options compute) {
  auto created = moe::expert_shard::create(*model, placement, shard, std::move(compute));
  if (!created) {
    spdlog::get("actors") ? spdlog::get("actors")->error("expert/{}: {}", shard, created.error().message)
                          : spdlog::error("expert/{}: {}", shard, created.error().message);
    self->quit(caf::make_error(caf::sec::invalid_argument, created.error().message));
    return expert_actor_type::behavior_type::make_empty_behavior();
  }
  const auto& arch = model->arch();
  auto& st = self->state;
  st.model = model;
  st.runner.emplace(std::move(*created), arch.n_layers, arch.n_routed);
  st.meter = actor_meter("expert/" + std::to_string(shard), "expert");
  st.metrics = std::move(metrics);
  st.report_ms = report_ms;
  if (preallocate_pairs > 0) st.runner->preallocate(arch, preallocate_pairs);
  if (st.metrics) self->send(self, report_atom::value);
  const auto n_experts = static_cast<int64_t>(arch.n_routed);
  return {
      [self](block_atom, block_msg& m) -> caf::result<reply_msg> {
        auto& st = self->state;
        actor_meter::scope busy(st.meter);
        if (auto ok = st.runner->run(m); !ok) return caf::make_error(caf::sec::invalid_argument, ok.error().message);
        return reply_msg{m.reply};
      },
      [self, n_experts](report_atom) {
        auto& st = self->state;
        auto& r = *st.runner;
        st.meter.count("blocks", static_cast<double>(r.blocks() - st.last_blocks));
        st.meter.count("bytes_in", static_cast<double>(r.bytes_in() - st.last_bytes_in));
        st.meter.count("bytes_out", static_cast<double>(r.bytes_out() - st.last_bytes_out));
        st.last_blocks = r.blocks();
        st.last_bytes_in = r.bytes_in();
        st.last_bytes_out = r.bytes_out();
        add_pair_counts(st.meter, r.take_pairs(), n_experts);
        st.meter.gauge("buffer_growths", static_cast<double>(r.growths()));
        self->send(st.metrics, st.meter.take(static_cast<int64_t>(self->mailbox().size())));
        self->delayed_send(self, std::chrono::milliseconds(st.report_ms), report_atom::value);
      },
  };
}

expert_actor_type::behavior_type expert_actor(expert_pointer self, std::shared_ptr<const engine_resources> res,
                                              int32_t shard, metrics_actor_type metrics) {
  // A block holds at most a step's pairs (capacity bounds it only under the spill policies).
  const int64_t pairs = res->cfg.engine.preallocate ? res->largest_block_pairs() : 0;
  return expert_actor_for(self, res->model, res->placement, shard, std::move(metrics), res->cfg.engine.report_ms,
                          pairs, res->compute);
}

}  // namespace sluice::actors
