#pragma once
/// Which expert shard (an expert actor: a core set or a GPU) holds each routed expert of
/// each layer. Every expert of every layer is on exactly one shard; a shard may hold none of
/// a layer's experts. Read-only once built; shared by the batcher and the expert actors.

#include <cstdint>
#include <utility>
#include <vector>

#include "config/error.hpp"
#include "moe/model_manifest.hpp"

namespace sluice::moe {

class expert_placement {
 public:
  /// experts_of[layer][shard] lists the experts shard `shard` holds in `layer` (n_layers
  /// lists of the same number n_shards >= 1 of shards). errc::invalid_argument, naming the
  /// layer and expert, for an id out of range, on two shards, or on none.
  static result<expert_placement> per_layer(const architecture& arch,
                                            const std::vector<std::vector<std::vector<int32_t>>>& experts_of);

  /// The same split in every layer: shard s holds experts_of[s].
  static result<expert_placement> same_in_every_layer(const architecture& arch,
                                                      const std::vector<std::vector<int32_t>>& experts_of);

  /// n_shards (1 .. n_routed) contiguous runs of expert ids, as equal as they divide.
  static result<expert_placement> contiguous(const architecture& arch, int32_t n_shards);

  /// Every expert of every layer on shard 0.
  static expert_placement single_shard(const architecture& arch) {
    std::vector<int32_t> shard_of(int64_t{arch.n_layers} * arch.n_routed, 0);
    return expert_placement(1, arch.n_layers, arch.n_routed, std::move(shard_of));
  }

  int32_t n_shards() const { return n_shards_; }
  int n_layers() const { return n_layers_; }
  int64_t n_experts() const { return n_experts_; }
  /// The shard holding `expert` of `layer` (both in range).
  int32_t shard_of(int layer, int32_t expert) const { return shard_of_[layer * n_experts_ + expert]; }

 private:
  expert_placement(int32_t n_shards, int n_layers, int64_t n_experts, std::vector<int32_t> shard_of)
      : n_shards_(n_shards), n_layers_(n_layers), n_experts_(n_experts), shard_of_(std::move(shard_of)) {}

  int32_t n_shards_;
  int n_layers_;
  int64_t n_experts_;
  std::vector<int32_t> shard_of_;  // i32 [n_layers, n_experts]
};

}  // namespace sluice::moe
