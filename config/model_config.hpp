#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [model]: which acoustic model directory to load (model.json, weights.safetensors, tokens.txt).
struct model_config {
  std::string dir = "models/default";

  template <class V>
  void visit(V&& v) {
    v("dir", dir, non_empty{}, "model directory, relative to the working directory");
  }
  std::string check() const { return {}; }
};

}  // namespace sluice::config
