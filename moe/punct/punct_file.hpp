#pragma once
/// The punctuation model's files as written by tools/train/punct_model.py (models/punct/README.md):
///   vocab.txt   one token per line, line i = id i; the first three are <unk>, <s>, </s>
///   punct.bin   "SLPUNCT1", u32 vocab, embed, hidden, kernel, layers, u32 dilation[layers],
///               f32 embedding[vocab][embed],
///               per layer l: f32 weight[hidden][in_l][kernel], f32 bias[hidden]
///                            (in_0 = embed, in_l = hidden after),
///               f32 head_weight[5][hidden], f32 head_bias[5]          (all little-endian)
/// Parsing checks every size against the file and rejects non-finite weights, so inference can
/// index without checks.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"

namespace sluice::moe::punct {

/// Logits per word: capitalize, then the marks none, '.', ',', '?'.
inline constexpr std::size_t n_outputs = 5;

struct conv_layer {
  uint32_t in = 0;
  uint32_t dilation = 1;
  std::vector<float> weight;  ///< f32 [hidden][in][kernel], as PyTorch's Conv1d stores it
  std::vector<float> bias;    ///< f32 [hidden]
};

struct punct_weights {
  std::vector<std::string> vocab;  ///< id → token
  uint32_t embed = 0;
  uint32_t hidden = 0;
  uint32_t kernel = 0;               ///< odd: the convolutions are centred ("same" padding)
  std::vector<float> embedding;      ///< f32 [vocab][embed]
  std::vector<conv_layer> layers;
  std::vector<float> head_weight;    ///< f32 [n_outputs][hidden]
  std::vector<float> head_bias;      ///< f32 [n_outputs]
};

/// Parses the two files' contents; `source` names them in messages. errc::truncated when the
/// binary ends early, errc::corrupt for a bad magic, impossible sizes, trailing bytes, non-finite
/// weights or a vocabulary that does not match the header.
result<punct_weights> parse_punct(std::string_view bin, std::string_view vocab_text,
                                  const std::string& source);

/// Reads `dir`/punct.bin and `dir`/vocab.txt (errc::io when either cannot be read) and parses them.
result<punct_weights> load_punct(const std::string& dir);

}  // namespace sluice::moe::punct
