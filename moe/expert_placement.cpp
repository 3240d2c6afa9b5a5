#include "moe/expert_placement.hpp"

#include <string>

namespace sluice::moe {

result<expert_placement> expert_placement::per_layer(const architecture& arch,
                                                     const std::vector<std::vector<std::vector<int32_t>>>& experts_of) {
  const int layers = arch.n_layers;
  const int64_t experts = arch.n_routed;
  if (static_cast<int>(experts_of.size()) != layers)
    return fail(errc::invalid_argument, "expert placement: " + std::to_string(experts_of.size()) +
                                            " layers given, the model has " + std::to_string(layers));
  const auto shards = static_cast<int32_t>(layers > 0 ? experts_of[0].size() : 0);
  if (shards < 1) return fail(errc::invalid_argument, "expert placement: no shards");
  constexpr int32_t unplaced = -1;
  std::vector<int32_t> shard_of(layers * experts, unplaced);
  for (int l = 0; l < layers; ++l) {
    const std::string where = "expert placement: layer " + std::to_string(l);
    if (static_cast<int32_t>(experts_of[l].size()) != shards)
      return fail(errc::invalid_argument, where + " has " + std::to_string(experts_of[l].size()) +
                                              " shards, layer 0 has " + std::to_string(shards));
    for (int32_t s = 0; s < shards; ++s)
      for (int32_t e : experts_of[l][s]) {
        if (e < 0 || e >= experts)
          return fail(errc::invalid_argument, where + ", shard " + std::to_string(s) + ": expert " + std::to_string(e) +
                                                  " is not in [0, " + std::to_string(experts) + ")");
        int32_t& slot = shard_of[l * experts + e];
        if (slot != unplaced)
          return fail(errc::invalid_argument, where + ": expert " + std::to_string(e) + " is on shards " +
                                                  std::to_string(slot) + " and " + std::to_string(s));
        slot = s;
      }
    for (int64_t e = 0; e < experts; ++e)
      if (shard_of[l * experts + e] == unplaced)
        return fail(errc::invalid_argument, where + ": expert " + std::to_string(e) + " is on no shard");
  }
  return expert_placement(shards, layers, experts, std::move(shard_of));
}

result<expert_placement> expert_placement::same_in_every_layer(const architecture& arch,
                                                               const std::vector<std::vector<int32_t>>& experts_of) {
  return per_layer(arch, std::vector<std::vector<std::vector<int32_t>>>(arch.n_layers, experts_of));
}

result<expert_placement> expert_placement::contiguous(const architecture& arch, int32_t n_shards) {
  const int64_t experts = arch.n_routed;
  if (n_shards < 1 || n_shards > experts)
    return fail(errc::invalid_argument, "expert placement: " + std::to_string(n_shards) + " shards for " +
                                            std::to_string(experts) + " experts (need 1 .. experts)");
  std::vector<std::vector<int32_t>> experts_of(n_shards);
  for (int64_t e = 0; e < experts; ++e) experts_of[e * n_shards / experts].push_back(static_cast<int32_t>(e));
  return same_in_every_layer(arch, experts_of);
}

}  // namespace sluice::moe
