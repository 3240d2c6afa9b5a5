#pragma once
// The golden vectors of a model directory, for the doctest suites that compare with them.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "moe/safetensors.hpp"

namespace sluice::test {

// One of a model directory's golden vectors (golden/*.safetensors: PyTorch's fbank input,
// logits, every block's output and routing).
struct golden_case {
  std::string name;
  moe::safetensors_file file;
  std::vector<float> fbank;  // f32 [frames, n_mels]
  int64_t frames = 0;
};

// Every golden case of `model_dir`, by file name.
inline std::vector<golden_case> golden_cases(const std::string& model_dir) {
  std::vector<golden_case> out;
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::directory_iterator(model_dir + "/golden")) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) {
    auto f = moe::safetensors_file::load(p.string());
    REQUIRE_MESSAGE(f.has_value(), f.error().message);
    auto fb = f->read_f32("fbank");
    REQUIRE(fb.has_value());
    const int64_t frames = f->find("fbank")->shape[0];
    out.push_back({p.stem().string(), std::move(*f), std::move(*fb), frames});
  }
  return out;
}

}  // namespace sluice::test
