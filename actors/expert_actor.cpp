#include "actors/expert_actor.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

#include "actors/actor_meter.hpp"
#include "actors/block_runner.hpp"

namespace sluice::actors {

namespace {

// Per (layer, expert) pair counts go out as counters named "pairs/<layer>/<expert>" only when
// non-zero, so a report stays small.
void add_pair_counts(actor_meter& meter, const std::vector<int64_t>& pairs, int64_t n_experts) {
  for (std::size_t i = 0; i < pairs.size(); ++i)
    if (pairs[i] != 0)
      meter.count("pairs/" + std::to_string(static_cast<int64_t>(i) / n_experts) + "/" +
                      std::to_string(static_cast<int64_t>(i) % n_experts),
                  static_cast<double>(pairs[i]));
}

}  // namespace

caf::behavior expert_actor_for(caf::event_based_actor* self, std::shared_ptr<const moe::acoustic_model> model,
                               moe::expert_placement placement, int32_t shard, caf::actor metrics, int report_ms,
                               int64_t preallocate_pairs) {
  auto created = moe::expert_shard::create(*model, placement, shard);
  if (!created) {
    spdlog::get("actors") ? spdlog::get("actors")->error("expert/{}: {}", shard, created.error().message)
                          : spdlog::error("expert/{}: {}", shard, created.error().message);
    self->quit(caf::make_error(caf::sec::invalid_argument, created.error().message));
    return {};
  }
  const auto& arch = model->arch();
  struct state {
    std::shared_ptr<const moe::acoustic_model> model;  // keeps the weights alive
    block_runner runner;
    actor_meter meter;
    int64_t last_bytes_in = 0, last_bytes_out = 0, last_blocks = 0;
  };
  auto st = std::make_shared<state>(state{model, block_runner(std::move(*created), arch.n_layers, arch.n_routed),
                                          actor_meter("expert/" + std::to_string(shard), "expert")});
  if (preallocate_pairs > 0) st->runner.preallocate(arch, preallocate_pairs);
  if (metrics) self->send(self, report_atom::value);
  const auto n_experts = static_cast<int64_t>(arch.n_routed);
  return {
      [=](block_atom, block_msg& m) -> caf::result<reply_msg> {
        actor_meter::scope busy(st->meter);
        if (auto ok = st->runner.run(m); !ok) return caf::make_error(caf::sec::invalid_argument, ok.error().message);
        return reply_msg{m.reply};
      },
      [=](report_atom) {
        auto& r = st->runner;
        st->meter.count("blocks", static_cast<double>(r.blocks() - st->last_blocks));
        st->meter.count("bytes_in", static_cast<double>(r.bytes_in() - st->last_bytes_in));
        st->meter.count("bytes_out", static_cast<double>(r.bytes_out() - st->last_bytes_out));
        st->last_blocks = r.blocks();
        st->last_bytes_in = r.bytes_in();
        st->last_bytes_out = r.bytes_out();
        add_pair_counts(st->meter, r.take_pairs(), n_experts);
        st->meter.gauge("buffer_growths", static_cast<double>(r.growths()));
        self->send(metrics, st->meter.take(static_cast<int64_t>(self->mailbox().size())));
        self->delayed_send(self, std::chrono::milliseconds(report_ms), report_atom::value);
      },
  };
}

caf::behavior expert_actor(caf::event_based_actor* self, std::shared_ptr<const engine_resources> res, int32_t shard,
                           caf::actor metrics) {
  // A block holds at most a step's pairs (capacity bounds it only under the spill policies).
  const int64_t pairs = res->cfg.engine.preallocate ? res->largest_block_pairs() : 0;
  return expert_actor_for(self, res->model, res->placement, shard, std::move(metrics), res->cfg.engine.report_ms,
                          pairs);
}

}  // namespace sluice::actors
