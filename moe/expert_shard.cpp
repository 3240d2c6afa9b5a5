#include "moe/expert_shard.hpp"

#include <string>

#include "moe/routed_experts.hpp"

namespace sluice::moe {

result<expert_shard> expert_shard::create(const acoustic_model& model, const expert_placement& placement,
                                          int32_t shard, compute_options compute) {
  const auto& a = model.arch();
  if (placement.n_layers() != a.n_layers || placement.n_experts() != a.n_routed)
    return fail(errc::invalid_argument, "expert shard: the placement is for " + std::to_string(placement.n_layers()) +
                                            " layers of " + std::to_string(placement.n_experts()) +
                                            " experts, the model has " + std::to_string(a.n_layers) + " of " +
                                            std::to_string(a.n_routed));
  if (shard < 0 || shard >= placement.n_shards())
    return fail(errc::invalid_argument, "expert shard: shard " + std::to_string(shard) + " is not in [0, " +
                                            std::to_string(placement.n_shards()) + ")");
  std::vector<uint8_t> held(int64_t{a.n_layers} * a.n_routed);
  for (int l = 0; l < a.n_layers; ++l)
    for (int32_t e = 0; e < a.n_routed; ++e) held[l * a.n_routed + e] = placement.shard_of(l, e) == shard;
  return expert_shard(model, compute, std::move(held));
}

expert_shard expert_shard::all_experts(const acoustic_model& model, compute_options compute) {
  const auto& a = model.arch();
  return expert_shard(model, compute, std::vector<uint8_t>(int64_t{a.n_layers} * a.n_routed, 1));
}

result<expert_shard> expert_shard::of_experts(const acoustic_model& model, std::vector<uint8_t> held,
                                              compute_options compute) {
  const auto& a = model.arch();
  const auto want = static_cast<std::size_t>(int64_t{a.n_layers} * a.n_routed);
  if (held.size() != want)
    return fail(errc::invalid_argument, "expert shard: a held-experts mask of " + std::to_string(held.size()) +
                                            " entries, the model has " + std::to_string(want) + " (layers x experts)");
  for (auto& h : held) h = h != 0;
  return expert_shard(model, compute, std::move(held));
}

int64_t expert_shard::n_held() const {
  int64_t n = 0;
  for (auto h : held_) n += h;
  return n;
}

result<void> expert_shard::check(const token_block& b) const {
  const auto& a = model_->arch();
  // The message prefix is built on the error path only: a block's run allocates nothing.
  auto where = [&] {
    return "expert shard: block of micro-batch " + std::to_string(b.micro_batch) + ", layer " +
           std::to_string(b.layer) + ": ";
  };
  if (b.layer < 0 || b.layer >= a.n_layers) return fail(errc::invalid_argument, where() + "no such layer");
  if (b.d != a.d_model || b.rows.size() % a.d_model != 0)
    return fail(errc::invalid_argument, where() + "rows of width " + std::to_string(b.d) + " (" +
                                            std::to_string(b.rows.size()) + " values), the model's is " +
                                            std::to_string(a.d_model));
  const int64_t pairs = b.n_pairs(), rows = b.n_rows();
  if (static_cast<int64_t>(b.pair_expert.size()) != pairs || static_cast<int64_t>(b.pair_weight.size()) != pairs)
    return fail(errc::invalid_argument, where() + "pair arrays of different lengths");
  for (int64_t p = 0; p < pairs; ++p) {
    const int32_t row = b.pair_row[p], e = b.pair_expert[p];
    if (row < 0 || row >= rows)
      return fail(errc::invalid_argument, where() + "pair " + std::to_string(p) + " names row " + std::to_string(row) +
                                              " of " + std::to_string(rows));
    if (e < 0 || e >= a.n_routed || !holds(b.layer, e))
      return fail(errc::invalid_argument, where() + "pair " + std::to_string(p) + " names expert " + std::to_string(e) +
                                              ", which this shard does not hold");
  }
  return {};
}

result<void> expert_shard::run(const token_block& block, expert_output& out, workspace& ws) const {
  if (auto ok = check(block); !ok) return ok;
  out.micro_batch = block.micro_batch;
  out.step = block.step;
  out.layer = block.layer;
  out.shard = block.shard;
  out.d = block.d;
  const int64_t rows = block.n_rows();
  ws.fit(out.out, rows * block.d);
  grouped_experts_forward(ctx_, model_->weights().blocks[block.layer].moe.experts, block.rows.data(), rows,
                          block.pair_row.data(), block.pair_expert.data(), block.pair_weight.data(), block.n_pairs(),
                          out.out.data(), ws);
  return {};
}

}  // namespace sluice::moe
