#pragma once
// Hand-made CTC logits for the decoder tests, over the recipe's vocabulary
// (<blank>, a-z, ', <space>).

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "moe/decoder/arpa_lm.hpp"
#include "moe/tokens.hpp"

namespace sluice::moe::test {

inline const token_table& recipe_tokens() {
  static const token_table t = [] {
    auto r = token_table::load(SLUICE_SOURCE_DIR "/tools/train/tokens.txt");
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    return *r;
  }();
  return t;
}

/// Token id of a frame-spec character: '_' blank, ' ' space, else the letter.
inline int32_t token_of(const token_table& t, char c) {
  if (c == '_') return t.blank_id();
  if (c == ' ') return t.space_id();
  return t.id_of(std::string_view(&c, 1));
}

/// One frame: the listed tokens get their probabilities, the remaining mass is shared evenly by
/// the other tokens; the logits are ln of those probabilities.
struct frame_probs {
  std::vector<std::pair<char, float>> probs;
};

/// Probability the peaky frames give their token.
constexpr float peak_prob = 0.9f;

inline std::vector<float> make_logits(const token_table& t, const std::vector<frame_probs>& frames) {
  const auto v = static_cast<std::size_t>(t.size());
  std::vector<float> out;
  out.reserve(frames.size() * v);
  for (const frame_probs& f : frames) {
    std::vector<float> p(v, -1.0f);
    float listed = 0;
    for (auto [c, prob] : f.probs) {
      const int32_t id = token_of(t, c);
      REQUIRE(id >= 0);
      p[static_cast<std::size_t>(id)] = prob;
      listed += prob;
    }
    const float rest = std::max(1.0f - listed, 1e-6f) / static_cast<float>(v - f.probs.size());
    for (float& x : p) out.push_back(std::log(x < 0 ? rest : x));
  }
  return out;
}

/// One frame per character of `spec` ('_' blank, ' ' space), peak_prob on that token.
inline std::vector<frame_probs> peaky_frames(std::string_view spec) {
  std::vector<frame_probs> frames;
  for (char c : spec) frames.push_back({{{c, peak_prob}}});
  return frames;
}

inline std::vector<float> peaky_logits(const token_table& t, std::string_view spec) {
  return make_logits(t, peaky_frames(spec));
}

/// An ARPA LM from text (the tests' hand-written ones).
inline arpa_lm parse_lm(const std::string& text) {
  auto lm = arpa_lm::parse(text, "test.arpa");
  REQUIRE_MESSAGE(lm.has_value(), lm.error().message);
  return std::move(*lm);
}

inline int32_t n_frames_of(const token_table& t, const std::vector<float>& logits) {
  return static_cast<int32_t>(logits.size() / static_cast<std::size_t>(t.size()));
}

// Bigrams "i see" and "the sea" are likely; every other pair backs off (weight 0) to unigrams of
// equal probability. So after "i" the LM prefers "see", after "the" it prefers "sea".
inline const char* see_sea_arpa = R"(\data\
ngram 1=7
ngram 2=2

\1-grams:
-1.0	</s>
-99	<s>	0
-2.0	<unk>
-1.0	i	0
-1.0	the	0
-1.0	sea	0
-1.0	see	0

\2-grams:
-0.1	i see
-0.1	the sea

\end\
)";

// Frames spelling `prefix`, then "se" and one frame torn evenly between 'a' and 'e': "sea" and
// "see" (e, blank, e) have the same best path probability.
inline std::vector<float> see_or_sea(std::string_view prefix) {
  auto frames = peaky_frames(std::string(prefix) + "_s_e_");
  frames.push_back({{{'a', 0.45f}, {'e', 0.45f}}});
  frames.push_back({{{'_', peak_prob}}});
  return make_logits(recipe_tokens(), frames);
}

}  // namespace sluice::moe::test
