#pragma once
/// The tensors weights.safetensors must hold, derived from the architecture alone: every
/// parameter and buffer of tools/train/model.py's state_dict, under its PyTorch name, with
/// its shape (nn.Linear weights are [out, in]). The loader checks the file against this list
/// before it reads a single value.

#include <cstdint>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "moe/model_manifest.hpp"
#include "moe/safetensors.hpp"

namespace sluice::moe {

struct tensor_spec {
  std::string name;             ///< "blocks.0.moe.router1.weight"
  std::vector<int64_t> shape;   ///< [4, 36]
  std::string formula;          ///< the shape in architecture terms: "[n_groups, d_model + n_acoustic]"
};

/// Every tensor the architecture needs, in state_dict order.
std::vector<tensor_spec> expected_tensors(const architecture& arch);

/// Checks `file` against expected_tensors(arch): a missing tensor, an unexpected one, a wrong
/// shape or a dtype other than F32, F16 or BF16 (widened to f32 on load) is an error naming the
/// tensor, what it is and what model.json's architecture needs (errc::invalid_config, or
/// errc::unsupported for dtypes).
/// Up to a few problems are listed, then how many more there are.
result<void> check_weights(const safetensors_file& file, const architecture& arch);

}  // namespace sluice::moe
