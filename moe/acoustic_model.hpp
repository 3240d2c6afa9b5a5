#pragma once
/// The loaded acoustic model: manifest, vocabulary and weights. Read-only after load and
/// shared by every stream and thread that runs it (it holds no per-stream state and no
/// scratch memory); per-stream state lives in stream_state, per-step memory in a micro_batch
/// and its workspace.

#include <memory>
#include <string>

#include "config/error.hpp"
#include "moe/model_manifest.hpp"
#include "moe/model_weights.hpp"
#include "moe/tokens.hpp"

namespace sluice::moe {

class acoustic_model {
 public:
  acoustic_model(model_manifest manifest, token_table tokens, model_weights weights)
      : manifest_(std::move(manifest)), tokens_(std::move(tokens)), weights_(std::move(weights)) {}

  const model_manifest& manifest() const { return manifest_; }
  const architecture& arch() const { return manifest_.arch; }
  const token_table& tokens() const { return tokens_; }
  const model_weights& weights() const { return weights_; }

 private:
  model_manifest manifest_;
  token_table tokens_;
  model_weights weights_;
};

/// Loads a model directory (model.json, the weights and tokens files it names), validating all
/// of it: the manifest (model_manifest.hpp), the safetensors structure (safetensors.hpp), the
/// tensors against the architecture (weight_manifest.hpp) and the vocabulary size. Every
/// error names the file and the problem.
result<std::shared_ptr<const acoustic_model>> load_model(const std::string& dir);

}  // namespace sluice::moe
