#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [model]: which acoustic model directory to load (model.json, weights.safetensors, tokens.txt).
struct model_config {
  std::string dir = "models/default";
  /// Keep a binary copy of the parsed word LM (lm.arpa) in the user's cache directory
  /// (config/cache_dir.hpp), named by the hash of the ARPA text, and load that at later starts
  /// (~10x faster than parsing the text); a missing, stale or damaged copy is parsed again.
  bool lm_cache = true;
  /// How the acoustic model's products by its weights compute: "f32" (as trained; the parity
  /// reference) or "bf16" (inputs rounded to bf16, f32 accumulation: about twice the multiply
  /// rate on CPUs with AVX-512 BF16; kernels/cpu/bf16_gemm.hpp). bf16 on a CPU without AVX-512
  /// BF16 is refused at start.
  std::string math = "f32";

  template <class V>
  void visit(V&& v) {
    v("dir", dir, non_empty{}, "model directory, relative to the working directory");
    v("lm_cache", lm_cache, any_bool{}, "keep the parsed word LM in ~/.cache/sluice (by the hash of lm.arpa) for faster starts");
    v("math", math, one_of{{"f32", "bf16"}},
      "products by the model's weights: f32, or bf16 inputs with f32 accumulation (needs AVX-512 BF16)");
  }
  std::string check() const { return {}; }
};

}  // namespace sluice::config
