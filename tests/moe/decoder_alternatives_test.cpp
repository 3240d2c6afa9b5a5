// Alternative readings (decoder.alternatives): the n-best list of a final result.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "decoder_test_util.hpp"
#include "moe/decoder/beam_search_decoder.hpp"
#include "moe/decoder/ctc_decoder.hpp"
#include "moe/decoder/greedy_decoder.hpp"
#include "moe/decoder/lexicon_decoder.hpp"

using namespace sluice;
using namespace sluice::moe;
using namespace sluice::moe::test;

namespace {

// see_or_sea("_i_"): "sea" and "see" have the same best path probability. Their sums over paths
// differ only by paths through the frames' other tokens (each (1 - 0.9) / 28 or (1 - 0.9) / 27
// next to a peak of 0.9, on the two frames around the torn one): by under 2%.
constexpr double acoustic_slack = 0.02;
std::vector<float> i_see_or_sea() { return see_or_sea("_i_"); }

// Confidences at scale 1: a reading's share is its probability's (the hand-worked figures below).
decoder_options with_alternatives(int n) {
  decoder_options o;
  o.alternatives = n;
  o.alternatives_scale = 1.0;
  return o;
}

decode_result lexicon_final(const std::vector<float>& logits, const arpa_lm* lm, int alternatives) {
  const auto& t = recipe_tokens();
  const std::vector<std::string> words = {"i", "sea", "see"};
  const auto lex = word_lexicon::build(t, lm, words, /*with_lm_unigrams=*/false);
  auto dec = lexicon_decoder::create(t, with_alternatives(alternatives), lexicon_view(&lex, nullptr), lm);
  REQUIRE_MESSAGE(dec.has_value(), dec.error().message);
  REQUIRE(dec->accept(logits, n_frames_of(t, logits)).has_value());
  CHECK(dec->partial().alternatives.empty());  // partial results carry none
  return dec->finalize();
}

std::set<std::string> texts_of(const std::vector<decode_alternative>& alts) {
  std::set<std::string> out;
  for (const auto& a : alts) out.insert(a.text);
  return out;
}

}  // namespace

TEST_SUITE("decoder") {
  TEST_CASE("alternatives: none unless asked for, and the first is the result itself") {
    const auto lm = parse_lm(see_sea_arpa);
    CHECK(lexicon_final(i_see_or_sea(), &lm, 0).alternatives.empty());
    const auto r = lexicon_final(i_see_or_sea(), &lm, 3);
    REQUIRE(!r.alternatives.empty());
    CHECK(r.alternatives[0].text == r.text);
    CHECK(r.alternatives[0].words == r.words);
    CHECK(r.alternatives[0].score == r.score);
    CHECK(texts_of(r.alternatives).size() == r.alternatives.size());  // distinct texts
    float sum = 0;
    for (const auto& a : r.alternatives) {
      CHECK(a.confidence >= 0.0f);
      sum += a.confidence;
    }
    CHECK(sum <= 1.0f + 1e-5f);
  }

  TEST_CASE("alternatives: two spellings the audio cannot tell apart share the probability as the LM says") {
    // Without an LM "i sea" and "i see" score alike: equal shares (to the acoustic slack).
    const auto plain = lexicon_final(i_see_or_sea(), nullptr, 2);
    REQUIRE(plain.alternatives.size() == 2);
    CHECK(texts_of(plain.alternatives) == std::set<std::string>{"i sea", "i see"});
    CHECK(plain.alternatives[0].confidence == doctest::Approx(plain.alternatives[1].confidence).epsilon(acoustic_slack));
    // Every other reading needs a frame's token of probability at most (1 - 0.9) / 27 instead
    // of one of at least 0.45: under 0.009 of the best's probability each, 26 of them under
    // 0.24, so each of the two gets more than 0.98 / (2.02 + 0.24) of the whole.
    CHECK(plain.alternatives[0].confidence > 0.43f);
    CHECK(plain.alternatives[1].confidence > 0.43f);
    CHECK(plain.alternatives[0].words.size() == 2);
    CHECK(plain.alternatives[1].words.size() == 2);
    // With the LM, "i see" (bigram, log10 -0.1) against "i sea" (backoff 0 to the unigram, -1.0):
    // 0.9 log10 units at LM weight 0.8 (the default), the rest of the two readings alike (to the
    // acoustic slack), so the shares stand at 10^0.72.
    const auto lm = parse_lm(see_sea_arpa);
    const auto fused = lexicon_final(i_see_or_sea(), &lm, 2);
    REQUIRE(fused.alternatives.size() == 2);
    CHECK(fused.alternatives[0].text == "i see");
    CHECK(fused.alternatives[1].text == "i sea");
    CHECK(fused.alternatives[0].confidence / fused.alternatives[1].confidence ==
          doctest::Approx(std::pow(10.0, 0.72)).epsilon(acoustic_slack));
    CHECK(std::abs(fused.alternatives[0].score - fused.alternatives[1].score - 0.8 * 0.9 * std::log(10.0)) <
          std::log(1 + acoustic_slack));
  }

  TEST_CASE("alternatives: the prefix beam search lists its readings, the greedy decoder its one") {
    const auto& t = recipe_tokens();
    const auto logits = i_see_or_sea();
    auto beam = beam_search_decoder::create(t, with_alternatives(2));
    REQUIRE(beam.has_value());
    REQUIRE(beam->accept(logits, n_frames_of(t, logits)).has_value());
    const auto b = beam->finalize();
    REQUIRE(b.alternatives.size() == 2);  // no <space> in the frames: one word each
    CHECK(texts_of(b.alternatives) == std::set<std::string>{"isea", "isee"});
    CHECK(b.alternatives[0].confidence == doctest::Approx(b.alternatives[1].confidence).epsilon(acoustic_slack));

    auto greedy = greedy_decoder::create(t, with_alternatives(4));
    REQUIRE(greedy.has_value());
    REQUIRE(greedy->accept(logits, n_frames_of(t, logits)).has_value());
    const auto g = greedy->finalize();
    REQUIRE(g.alternatives.size() == 1);
    CHECK(g.alternatives[0].text == g.text);
    CHECK(g.alternatives[0].confidence == 1.0f);
  }

  TEST_CASE("alternatives: readings of a listed text add to its share, and only listed texts are aligned") {
    // Four readings at ln scores 0, -1, -2, -3: texts a, b, a, c. Two asked for: a (readings
    // 0 and 2) and b; c is not listed but its probability counts in the whole.
    const std::vector<std::string> text = {"a", "b", "a", "c"};
    const std::vector<final_candidate> ranked = {{0, 0.0}, {1, -1.0}, {2, -2.0}, {3, -3.0}};
    decode_result best;
    best.text = "a";
    best.score = 0;
    std::vector<std::size_t> made;
    const auto text_of = [&](std::size_t i) { return text[i]; };
    const auto result_of = [&](std::size_t i, double score) {
      made.push_back(i);
      decode_result r;
      r.text = text[i];
      r.score = score;
      return r;
    };
    const auto alts = n_best(ranked, 2, 1.0, best, text_of, result_of);
    REQUIRE(alts.size() == 2);
    CHECK(alts[0].text == "a");
    CHECK(alts[1].text == "b");
    const double whole = 1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0);
    CHECK(alts[0].confidence == doctest::Approx((1 + std::exp(-2.0)) / whole).epsilon(1e-6));
    CHECK(alts[1].confidence == doctest::Approx(std::exp(-1.0) / whole).epsilon(1e-6));
    CHECK(alts[1].score == -1.0);
    CHECK(made == std::vector<std::size_t>{1});  // the best was given; the duplicate and c not made

    // At scale 0.5 each reading weighs exp(0.5 x score): shares flatten, the order stays.
    const auto flat = n_best(ranked, 2, 0.5, best, text_of, result_of);
    REQUIRE(flat.size() == 2);
    CHECK(flat[0].text == "a");
    const double half = 1 + std::exp(-0.5) + std::exp(-1.0) + std::exp(-1.5);
    CHECK(flat[0].confidence == doctest::Approx((1 + std::exp(-1.0)) / half).epsilon(1e-6));
    CHECK(flat[1].confidence == doctest::Approx(std::exp(-0.5) / half).epsilon(1e-6));
    CHECK(flat[1].score == -1.0);  // scores are the decoder's, unscaled

    // A reading that cannot end (-inf) is left out; a best that cannot end stands alone.
    const std::vector<final_candidate> with_dead = {{0, 0.0}, {1, -std::numeric_limits<double>::infinity()}};
    const auto one = n_best(with_dead, 3, 1.0, best, text_of, result_of);
    REQUIRE(one.size() == 1);
    CHECK(one[0].confidence == 1.0f);
    const std::vector<final_candidate> dead = {{0, -std::numeric_limits<double>::infinity()}};
    const auto alone = n_best(dead, 3, 1.0, best, text_of, result_of);
    REQUIRE(alone.size() == 1);
    CHECK(alone[0].text == "a");
    CHECK(n_best(ranked, 0, 1.0, best, text_of, result_of).empty());
  }

  TEST_CASE("alternatives: the setting is checked like every decoder setting") {
    decoder_options o;
    o.alternatives = decoder_options::max_alternatives + 1;
    CHECK(!validate(o).has_value());
    o.alternatives = -1;
    CHECK(!validate(o).has_value());
    o.alternatives = decoder_options::max_alternatives;
    CHECK(validate(o).has_value());
    o.alternatives_scale = 0;
    CHECK(!validate(o).has_value());
    o.alternatives_scale = 1.5;
    CHECK(!validate(o).has_value());
  }
}
