#include <doctest/doctest.h>

#include <cmath>

#include "decoder_test_util.hpp"
#include "moe/decoder/beam_search_decoder.hpp"
#include "moe/decoder/context_graph.hpp"

using namespace sluice;
using namespace sluice::moe;
using namespace sluice::moe::test;

namespace {

context_graph graph(std::vector<hotword> words) {
  auto g = context_graph::build(words, recipe_tokens());
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  return std::move(*g);
}

// Walks `text` from the start state; returns the summed deltas (and the end state in `end`).
float walk(const context_graph& g, std::string_view text, context_state& end) {
  float total = 0;
  context_state s = g.start();
  for (char c : text) {
    const auto step = g.step(s, token_of(recipe_tokens(), c));
    total += step.delta;
    s = step.next;
  }
  end = s;
  return total;
}

float walk_and_finish(const context_graph& g, std::string_view text) {
  context_state s;
  const float total = walk(g, text, s);
  return total + g.finish(s);
}

// The first letter is ambiguous: `first` (0.55) against `other` (0.40), then the rest of `word`
// peaky, then `tail` peaky.
std::vector<float> ambiguous_word(char first, char other, std::string_view rest, std::string_view tail) {
  std::vector<frame_probs> f = {{{{'_', peak_prob}}}, {{{first, 0.55f}, {other, 0.40f}}}, {{{'_', peak_prob}}}};
  for (char c : rest) {
    f.push_back({{{c, peak_prob}}});
    f.push_back({{{'_', peak_prob}}});
  }
  for (const frame_probs& x : peaky_frames(tail)) f.push_back(x);
  return make_logits(recipe_tokens(), f);
}

struct run {
  decode_result final_result;
  std::vector<std::string> partials;  // after every frame
};

run decode(const std::vector<float>& logits, context_graph g) {
  const auto& t = recipe_tokens();
  decoder_options o;
  o.beam_size = 4;
  auto dec = beam_search_decoder::create(t, o, nullptr, std::move(g));
  REQUIRE(dec.has_value());
  run r;
  const auto v = static_cast<std::size_t>(t.size());
  for (std::size_t f = 0; f * v < logits.size(); ++f) {
    REQUIRE(dec->accept(std::span<const float>(logits).subspan(f * v, v), 1).has_value());
    r.partials.push_back(dec->partial().text);
  }
  r.final_result = dec->finalize();
  return r;
}

}  // namespace

TEST_SUITE("decoder") {
  TEST_CASE("hotwords: each token down a hotword earns its weight, completion keeps it") {
    const auto g = graph({{"kat", 2.0f}});
    CHECK_FALSE(g.empty());
    context_state s;
    CHECK(walk(g, "ka", s) == doctest::Approx(4.0));
    CHECK(s.pending == doctest::Approx(4.0));
    CHECK(walk(g, "kat", s) == doctest::Approx(6.0));
    CHECK(walk(g, "kat ", s) == doctest::Approx(6.0));
    CHECK(s.pending == 0);  // completed: nothing left to take back
    CHECK(walk_and_finish(g, "kat") == doctest::Approx(6.0));  // the utterance ends the word
    CHECK(walk_and_finish(g, "the kat is here") == doctest::Approx(6.0));
    CHECK(walk_and_finish(g, "kat kat") == doctest::Approx(12.0));
  }

  TEST_CASE("hotwords: a path that breaks off gives its bonus back") {
    const auto g = graph({{"kat", 2.0f}});
    CHECK(walk_and_finish(g, "ka") == doctest::Approx(0.0));    // utterance ends mid-word
    CHECK(walk_and_finish(g, "kax") == doctest::Approx(0.0));   // another letter
    CHECK(walk_and_finish(g, "katy") == doctest::Approx(0.0));  // the word goes on
    CHECK(walk_and_finish(g, "ka kat") == doctest::Approx(6.0));
    context_state s;
    walk(g, "ka", s);
    const auto step = g.step(s, token_of(recipe_tokens(), 'x'));
    CHECK(step.delta == doctest::Approx(-4.0));
    CHECK_FALSE(step.completed);
    // Whole words only: no bonus inside another word.
    CHECK(walk_and_finish(g, "skat") == doctest::Approx(0.0));
    context_state mid;
    CHECK(walk(g, "skat", mid) == doctest::Approx(0.0));
  }

  TEST_CASE("hotwords: phrases, shared prefixes, case folding and bad phrases") {
    const auto g = graph({{"Acme  Corp", 1.0f}, {"acme", 0.5f}});
    // "acme corp": 9 tokens, the shared "acme" nodes earn the larger weight.
    CHECK(walk_and_finish(g, "acme corp") == doctest::Approx(9.0));
    CHECK(walk_and_finish(g, "acme") == doctest::Approx(4.0));
    // "acme" completes when the space comes (that space is also an inner token of "acme corp", so
    // it earns 1.0); "co" then breaks off the longer phrase, and only what was earned after the
    // completed "acme" is given back.
    CHECK(walk_and_finish(g, "acme co") == doctest::Approx(5.0));
    CHECK(walk_and_finish(g, "acme cop") == doctest::Approx(5.0));
    CHECK(walk_and_finish(g, "acme corp inc") == doctest::Approx(9.0));

    const auto& t = recipe_tokens();
    std::vector<hotword> empty = {{"  ", 1.0f}};
    CHECK(context_graph::build(empty, t).error().message.find("is empty") != std::string::npos);
    std::vector<hotword> digit = {{"route 66", 1.0f}};
    CHECK(context_graph::build(digit, t).error().message.find("no token for character '6'") != std::string::npos);
    std::vector<hotword> negative = {{"acme", -1.0f}};
    CHECK(context_graph::build(negative, t).error().code == errc::invalid_argument);
    CHECK(context_graph{}.empty());
  }

  TEST_CASE("hotwords: biasing makes a plausible rare word win, in partial and final results") {
    // Acoustically "cat" (0.55) over "kat" (0.40).
    const auto logits = ambiguous_word('c', 'k', "at", "");
    const auto plain = decode(logits, {});
    CHECK(plain.final_result.text == "cat");
    const auto biased = decode(logits, graph({{"kat", 1.0f}}));
    CHECK(biased.final_result.text == "kat");
    // Frame 1 holds the first letter: the partial result already prefers "k".
    CHECK(plain.partials[1] == "c");
    CHECK(biased.partials[1] == "k");
    CHECK(biased.partials.back() == "kat");
    // Confidence stays acoustic: the biased word is only as sure as its 'k' (0.40).
    REQUIRE(biased.final_result.words.size() == 1);
    CHECK(biased.final_result.words[0].confidence == doctest::Approx(0.40).epsilon(1e-3));
  }

  TEST_CASE("hotwords: a broken-off hotword prefix loses its bonus in the beam") {
    // Acoustically "kat is" (k 0.55 over c 0.40); the hotword "catalog" pulls "cat" ahead while it
    // may still become "catalog", and lets go when the space shows it did not.
    const auto logits = ambiguous_word('k', 'c', "at", "_ _i_s_");
    const auto plain = decode(logits, {});
    CHECK(plain.final_result.text == "kat is");
    const auto biased = decode(logits, graph({{"catalog", 3.0f}}));
    // After the 't' (frame 5) the boosted prefix leads the partial result ...
    CHECK(biased.partials[5] == "cat");
    // ... and the final result is what the audio says, with the unbiased score.
    CHECK(biased.final_result.text == "kat is");
    CHECK(biased.final_result.score == doctest::Approx(plain.final_result.score).epsilon(1e-6));

    // Where "cat is" is what the audio says, the prefix's bonus comes back out entirely (the scores
    // differ only by the mass of unlikely paths that one beam kept and the other pruned).
    const auto cat_logits = ambiguous_word('c', 'k', "at", "_ _i_s_");
    const auto cat_plain = decode(cat_logits, {});
    const auto cat_biased = decode(cat_logits, graph({{"catalog", 3.0f}}));
    CHECK(cat_biased.final_result.text == "cat is");
    CHECK(cat_biased.final_result.score == doctest::Approx(cat_plain.final_result.score).epsilon(1e-6));
  }
}
