#pragma once
/// Punctuation and casing for recognised words: per word, whether its first letter is written
/// upper-case and which mark follows it. The model (tools/train/train_punct.py, files described
/// in moe/punct/punct_file.hpp) is a 1-D convolutional token classifier: each word sees a window
/// of neighbours on both sides (±(kernel-1)/2 · Σ dilations words), so a word's marks can change
/// while the words after it are still arriving: run it on finals, or on the stable part of a
/// partial with that window of words after it.

#include <array>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/error.hpp"
#include "kernels/cpu/ops.hpp"
#include "moe/punct/punct_file.hpp"

namespace sluice::moe::punct {

struct word_mark {
  bool capitalize = false;  ///< write the word's first letter upper-case
  char mark = 0;            ///< 0, '.', ',' or '?' written right after the word
};

/// Logits of one word: [capitalize, none, '.', ',', '?'].
using word_logits = std::array<float, n_outputs>;

class punctuator {
 public:
  /// Loads `dir`/punct.bin and `dir`/vocab.txt (models/punct/). Errors as values: errc::io for a
  /// missing file, errc::truncated / errc::corrupt for a damaged one; never throws.
  static result<punctuator> load(const std::string& dir);
  /// From parsed weights (tests build small ones by hand).
  static punctuator from_weights(punct_weights weights);

  /// Marks for `lowercase_words` (the recogniser's words; upper-case letters are folded, unknown
  /// words are the model's <unk>). Capitalize when the model's logit is > 0, mark = the most
  /// likely of the four; then two rules make the display consistent: the first word and every
  /// word after a '.' or '?' are capitalized, and "i" with its contractions is always
  /// capitalized. Empty input → empty output. Thread-safe (const, no shared scratch).
  std::vector<word_mark> run(const std::vector<std::string>& lowercase_words) const;

  /// The model's raw logits per word, without the display rules (the equivalence test compares
  /// them with PyTorch's).
  std::vector<word_logits> logits(const std::vector<std::string>& lowercase_words) const;

  std::size_t vocab_size() const { return w_.vocab.size(); }

 private:
  explicit punctuator(punct_weights weights);
  int token_id(const std::string& word) const;

  punct_weights w_;
  // Conv weights reordered to [layer][kernel tap][in][out]: per tap an [in, out] matrix, the B
  // of one matmul over the time-major activations (the model's own SIMD kernels, kernels/cpu).
  // Until 2026-12-04 a scalar-compiled loop over taps and inputs, ~5% of the CPU of 736 live
  // channels with partials (engine_bench).
  std::vector<std::vector<float>> taps_;
  const kernels::cpu::cpu_ops* ops_ = nullptr;
  std::unordered_map<std::string, int> index_;
};

}  // namespace sluice::moe::punct
