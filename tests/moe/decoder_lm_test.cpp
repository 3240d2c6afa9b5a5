#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "decoder_test_util.hpp"
#include "moe/decoder/arpa_lm.hpp"
#include "moe/decoder/beam_search_decoder.hpp"

using namespace sluice;
using namespace sluice::moe;
using namespace sluice::moe::test;

namespace {

const std::string tiny_path = SLUICE_TEST_DATA_DIR "/lm/tiny.arpa";
const std::string kn3_path = SLUICE_TEST_DATA_DIR "/lm/kn3.arpa";

arpa_lm load(const std::string& path) {
  auto lm = arpa_lm::load(path);
  REQUIRE_MESSAGE(lm.has_value(), lm.error().message);
  return std::move(*lm);
}

// log10 P(words.back() | the words before it), starting from <s> when `from_bos`.
double log10_prob(const arpa_lm& lm, std::vector<std::string_view> words, bool from_bos = true) {
  int32_t state = from_bos ? lm.begin_state() : lm.null_state();
  double lp = 0;
  for (std::string_view w : words) {
    const lm_step s = lm.score(state, w);
    lp = s.log_prob;
    state = s.next;
  }
  return lp / std::numbers::ln10;
}

// `text` parsed with an OOV floor of log10 -7 (the models here list no <unk>).
arpa_lm parse_with_floor(const std::string& text) {
  arpa_options o;
  o.oov_log10_prob = -7.0f;
  auto lm = arpa_lm::parse(text, "t", o);
  REQUIRE_MESSAGE(lm.has_value(), lm.error().message);
  return std::move(*lm);
}

// The error message of parsing `text`, or "" when it parses.
std::string parse_error(const std::string& text) {
  auto lm = arpa_lm::parse(text, "t.arpa");
  return lm ? std::string() : lm.error().message;
}

constexpr double exact = 1e-5;

}  // namespace

TEST_SUITE("decoder") {
  TEST_CASE("lm: a valid ARPA file loads with its counts and vocabulary") {
    const auto lm = load(tiny_path);
    CHECK(lm.order() == 3);
    CHECK(lm.ngram_count(1) == 6);
    CHECK(lm.ngram_count(2) == 4);
    CHECK(lm.ngram_count(3) == 2);
    CHECK(lm.vocab_size() == 6);
    CHECK(lm.word(lm.word_id("c")) == "c");
    CHECK(lm.word_id("zebra") == -1);
    CHECK(lm.begin_state() != lm.null_state());
  }

  TEST_CASE("lm: probabilities with backoff, checked by hand") {
    const auto lm = load(tiny_path);
    // Listed n-grams.
    CHECK(log10_prob(lm, {"a"}) == doctest::Approx(-0.2).epsilon(exact));             // <s> a
    CHECK(log10_prob(lm, {"a", "b"}) == doctest::Approx(-0.1).epsilon(exact));        // <s> a b
    CHECK(log10_prob(lm, {"a", "b", "c"}) == doctest::Approx(-0.15).epsilon(exact));  // a b c
    // <s> a </s>: no "<s> a </s>", bo(<s> a) -0.1; no "a </s>", bo(a) -0.3; p(</s>) -1.2.
    CHECK(log10_prob(lm, {"a", "</s>"}) == doctest::Approx(-0.1 - 0.3 - 1.2).epsilon(exact));
    // <s> a b </s>: the history is "a b"; no "a b </s>", bo(a b) -0.25; "b </s>" -0.3.
    const int32_t after_ab = lm.score(lm.score(lm.begin_state(), "a").next, "b").next;
    CHECK(lm.end_of_sentence(after_ab) / std::numbers::ln10 == doctest::Approx(-0.25 - 0.3).epsilon(exact));
    // <s> a b a: no "a b a", bo(a b) = -0.25; no "b a", bo(b) = -0.2; p(a) = -0.5.
    CHECK(log10_prob(lm, {"a", "b", "a"}) == doctest::Approx(-0.25 - 0.2 - 0.5).epsilon(exact));
    // b c </s> from an empty history: no "b c </s>", bo(b c) -0.05; no "c </s>", bo(c) -0.4; -1.2.
    CHECK(log10_prob(lm, {"b", "c", "</s>"}, false) == doctest::Approx(-0.05 - 0.4 - 1.2).epsilon(exact));
    // c a: no "c a", bo(c) -0.4; p(a) -0.5.
    CHECK(log10_prob(lm, {"c", "a"}, false) == doctest::Approx(-0.4 - 0.5).epsilon(exact));
    // Unknown words are <unk>: after <s>, bo(<s>) -0.5 + p(<unk>) -2.0; the history is then <unk>.
    CHECK(log10_prob(lm, {"zebra"}) == doctest::Approx(-2.5).epsilon(exact));
    CHECK(log10_prob(lm, {"zebra", "a"}) == doctest::Approx(-0.5).epsilon(exact));
  }

  TEST_CASE("lm: without <unk>, unknown words get the floor and reset the history") {
    const std::string text = "\\data\\\nngram 1=2\nngram 2=1\n\n\\1-grams:\n-0.3 a -0.2\n-0.3 b\n\n"
                             "\\2-grams:\n-0.1 a b\n\n\\end\\\n";
    const auto lm = parse_with_floor(text);
    const lm_step s = lm.score(lm.score(lm.null_state(), "a").next, "zebra");
    CHECK(s.log_prob / std::numbers::ln10 == doctest::Approx(-7.0).epsilon(exact));
    CHECK(s.next == lm.null_state());
    CHECK(lm.begin_state() == lm.null_state());  // no <s> listed
    CHECK(lm.end_of_sentence(lm.null_state()) == 0.0f);  // nor </s>
  }

  TEST_CASE("lm: malformed ARPA files are precise errors with line numbers") {
    const std::string head = "\\data\\\nngram 1=2\nngram 2=1\n\n\\1-grams:\n";  // lines 1-5
    const std::string uni = "-0.3 a -0.2\n-0.3 b\n";                             // lines 6-7
    const std::string bi = "\n\\2-grams:\n-0.1 a b\n\n\\end\\\n";                 // lines 8-12
    CHECK(parse_error(head + uni + bi).empty());
    CHECK(parse_error("hello\n") == "t.arpa: no \\data\\ section");
    CHECK(parse_error("\\data\\\nngram 1=x\n").find("t.arpa:2: expected 'ngram N=count'") == 0);
    CHECK(parse_error("\\data\\\nngram 2=3\n").find("t.arpa:2: expected the count of 1-grams") == 0);
    CHECK(parse_error("\\data\\\n\\1-grams:\n").find("t.arpa:2: \\data\\ announces no n-gram counts") == 0);
    CHECK(parse_error("\\data\\\nngram 1=2\n").find("t.arpa: ends inside \\data\\") == 0);
    CHECK(parse_error(head + "-0.x a\n-0.3 b\n" + bi) == "t.arpa:6: bad log10 probability '-0.x'");
    CHECK(parse_error(head + "0.5 a\n-0.3 b\n" + bi) == "t.arpa:6: log10 probability 0.5 is above 0");
    CHECK(parse_error(head + "-0.3 a zz\n-0.3 b\n" + bi) == "t.arpa:6: bad backoff 'zz'");
    CHECK(parse_error(head + "-0.3 a b c d\n-0.3 b\n" + bi).find("t.arpa:6: a 1-gram line holds") == 0);
    CHECK(parse_error(head + "-0.3 a\n-0.3 a\n" + bi) == "t.arpa:7: duplicate 1-gram 'a'");
    CHECK(parse_error(head + uni + "-0.3 c\n" + bi) == "t.arpa:8: more 1-grams than the 2 announced in \\data\\");
    CHECK(parse_error(head + "-0.3 a\n" + bi) ==
          "t.arpa:8: \\1-grams: (line 5) lists 1 n-grams, \\data\\ announced 2");
    CHECK(parse_error(head + uni + "\n\\2-grams:\n-0.1 a zz\n\n\\end\\\n") ==
          "t.arpa:10: word 'zz' is not among the 1-grams");
    CHECK(parse_error(head + uni + "\n\\2-grams:\n-0.1 a b -0.5\n\n\\end\\\n") ==
          "t.arpa:10: 2-grams are the highest order and take no backoff");
    CHECK(parse_error(head + uni + "\n\\3-grams:\n-0.1 a b\n\n\\end\\\n") ==
          "t.arpa:9: expected '\\2-grams:', found '\\3-grams:'");
    CHECK(parse_error(head + uni + "\n\\2-grams:\n-0.1 a b\n").find("t.arpa: ends inside \\2-grams: (line 9)") == 0);
    CHECK(parse_error(head + uni + "\n\\2-grams:\n-0.1 a b\n\\3-grams:\n") ==
          "t.arpa:11: expected '\\end\\', found '\\3-grams:'");
    const std::string tri = "\\data\\\nngram 1=2\nngram 2=1\nngram 3=1\n\n\\1-grams:\n-0.3 a\n-0.3 b\n\n"
                            "\\2-grams:\n-0.1 a b\n\n\\3-grams:\n-0.1 b a b\n\n\\end\\\n";
    CHECK(parse_error(tri) == "t.arpa:14: the context 'b a' of 3-gram 'b a b' is not listed as a 2-gram");
    auto missing = arpa_lm::load(SLUICE_TEST_DATA_DIR "/lm/no_such.arpa");
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().code == errc::io);
  }

  TEST_CASE("lm: the model build_lm.py made loads and sums to one over the vocabulary") {
    const auto lm = load(kn3_path);
    CHECK(lm.order() == 3);
    CHECK(lm.ngram_count(3) > 0);
    auto sum_after = [&](std::vector<std::string_view> history) {
      int32_t state = lm.begin_state();
      for (std::string_view w : history) state = lm.score(state, w).next;
      double sum = 0;
      for (int32_t w = 0; w < lm.vocab_size(); ++w)
        if (lm.word(w) != arpa_lm::begin_sentence) sum += std::exp(lm.score(state, w).log_prob);
      return sum;
    };
    constexpr double tolerance = 1e-4;
    for (auto h : std::vector<std::vector<std::string_view>>{
             {}, {"thank"}, {"thank", "you"}, {"i", "would"}, {"my", "account"}, {"can", "i"}, {"zebra"},
             {"please", "hold"}, {"i", "want", "to"}}) {
      CAPTURE(h.size());
      CHECK(sum_after(h) == doctest::Approx(1.0).epsilon(tolerance));
    }
  }

  TEST_CASE("lm: score_all answers a mixed batch of queries exactly as score() answers each") {
    // Histories of every depth (empty, <s>, one and two words, ones the model lists and ones it
    // backs off from), every word and an unknown one, in one batch: the batched rounds must give
    // each query score()'s float answer bit for bit and its next state, with and without <unk>.
    const std::string no_unk = "\\data\\\nngram 1=3\nngram 2=2\nngram 3=1\n\n\\1-grams:\n-0.3 a -0.2\n-0.3 b -0.1\n"
                               "-0.5 c\n\n\\2-grams:\n-0.1 a b -0.3\n-0.2 b c\n\n\\3-grams:\n-0.05 a b c\n\n\\end\\\n";
    const auto bare = parse_with_floor(no_unk);
    const auto kn3 = load(kn3_path);
    std::vector<uint32_t> scratch;
    const arpa_lm* const models[] = {&kn3, &bare};
    for (const arpa_lm* lm : models) {
      std::vector<int32_t> states{lm->null_state(), lm->begin_state()};
      for (int32_t i = 0; i < 40 && i < lm->vocab_size(); ++i) {
        const int32_t one = lm->score(lm->begin_state(), i).next;
        states.push_back(one);
        states.push_back(lm->score(one, (i * 7 + 3) % lm->vocab_size()).next);
      }
      std::vector<arpa_lm::query> queries;
      for (int32_t s : states)
        for (int32_t w = -1; w < lm->vocab_size(); w += (lm->vocab_size() > 100 ? 13 : 1))
          queries.push_back({s, w, {}});
      // In the small model, by hand: after "a b", "c" is listed (-0.05); after "a b", "a" backs off
      // twice (bo(a b) -0.3, bo(b) -0.1, p(a) -0.3); after "a", "c" once (bo(a) -0.2, p(c) -0.5).
      const std::size_t hand = queries.size();
      if (lm == &bare) {
        const int32_t a = lm->word_id("a"), b = lm->word_id("b"), c = lm->word_id("c");
        const int32_t after_a = lm->score(lm->null_state(), a).next;
        const int32_t after_ab = lm->score(after_a, b).next;
        queries.push_back({after_ab, c, {}});
        queries.push_back({after_ab, a, {}});
        queries.push_back({after_a, c, {}});
      }
      lm->score_all(queries, scratch);
      for (const arpa_lm::query& q : queries) {
        const lm_step want = lm->score(q.state, q.word);
        CAPTURE(q.state);
        CAPTURE(q.word);
        CHECK(q.answer.log_prob == want.log_prob);
        CHECK(q.answer.next == want.next);
      }
      CHECK(queries.size() >= 30);  // a batch, not a handful
      if (lm == &bare) {
        REQUIRE(queries.size() == hand + 3);
        CHECK(queries[hand].answer.log_prob / std::numbers::ln10 == doctest::Approx(-0.05).epsilon(exact));
        CHECK(queries[hand + 1].answer.log_prob / std::numbers::ln10 == doctest::Approx(-0.3 - 0.1 - 0.3).epsilon(exact));
        CHECK(queries[hand + 2].answer.log_prob / std::numbers::ln10 == doctest::Approx(-0.2 - 0.5).epsilon(exact));
      }
    }
  }

  TEST_CASE("lm: a word's bound is at least its every answer, and is its best n-gram plus the largest backoffs, by hand") {
    // By hand (log10): the largest backoff of each order below the top is 0.2 (a, order 1) and
    // 0.1 (a b, order 2), so a history adds at most 0.3 on the way down. "a": best listed -0.6
    // (<s> a) -> -0.3; "b": -0.1 (a b) -> 0.2 (above ln 1: the decoder clamps); "c": -0.05 (a b c)
    // -> 0.25; "</s>" -1.2 -> -0.9; an unknown word: the floor -7 (no <unk>; no backoff).
    const std::string text = "\\data\\\nngram 1=5\nngram 2=3\nngram 3=1\n\n\\1-grams:\n-99 <s> -0.5\n-0.7 a 0.2\n"
                             "-0.9 b -0.3\n-1.1 c\n-1.2 </s>\n\n\\2-grams:\n-0.6 <s> a\n-0.1 a b 0.1\n-0.4 b c\n\n"
                             "\\3-grams:\n-0.05 a b c\n\n\\end\\\n";
    const auto hand = parse_with_floor(text);
    const auto kn3 = load(kn3_path);
    const auto ln = [](double log10) { return static_cast<float>(log10 * std::numbers::ln10); };
    CHECK(hand.max_log_prob(hand.word_id("a")) == doctest::Approx(ln(-0.6 + 0.3)).epsilon(exact));
    CHECK(hand.max_log_prob(hand.word_id("b")) == doctest::Approx(ln(-0.1 + 0.3)).epsilon(exact));
    CHECK(hand.max_log_prob(hand.word_id("c")) == doctest::Approx(ln(-0.05 + 0.3)).epsilon(exact));
    CHECK(hand.max_log_prob(hand.word_id("</s>")) == doctest::Approx(ln(-1.2 + 0.3)).epsilon(exact));
    CHECK(hand.max_log_prob(-1) == doctest::Approx(ln(-7)).epsilon(exact));
    // Every history reachable from the empty one and <s> by up to three words, every word and an
    // unknown one: no answer above the word's bound (compared as floats, as the decoder does).
    const arpa_lm* const models[] = {&hand, &kn3};
    for (const arpa_lm* lm : models) {
      std::vector<int32_t> states{lm->null_state(), lm->begin_state()};
      for (std::size_t depth = 0, from = 0; depth < 3; ++depth) {
        const std::size_t to = states.size();
        for (std::size_t i = from; i < to; ++i)
          for (int32_t w = -1; w < lm->vocab_size(); ++w) {
            const int32_t next = lm->score(states[i], w).next;
            if (std::find(states.begin(), states.end(), next) == states.end()) states.push_back(next);
          }
        from = to;
      }
      int64_t checked = 0, within_a_tenth = 0;
      for (int32_t w = -1; w < lm->vocab_size(); ++w) {
        float best = -std::numeric_limits<float>::infinity();
        for (int32_t s : states) {
          const float got = lm->score(s, w).log_prob;
          CHECK(got <= lm->max_log_prob(w));
          best = std::max(best, got);
          ++checked;
        }
        within_a_tenth += best >= lm->max_log_prob(w) - 0.1f;
      }
      MESSAGE(states.size() << " histories, " << checked << " answers checked, " << within_a_tenth
                            << " words reach within 0.1 of their bound");
      CHECK(states.size() >= 6);
      // Not a bound that says nothing: in kn3 (backoffs <= 1) most words reach it in some history.
      if (lm == &kn3) CHECK(within_a_tenth * 2 > lm->vocab_size());
    }
  }

  TEST_CASE("lm: fusion flips an acoustically close decision toward the words the LM knows") {
    // "the kat" by a hair (k 0.55, c 0.40); the LM knows "the cat" and not "kat".
    const auto& t = recipe_tokens();
    std::vector<frame_probs> f = peaky_frames("_t_h_e_ _");
    f.push_back({{{'k', 0.55f}, {'c', 0.40f}}});
    for (const frame_probs& x : peaky_frames("_a_t_")) f.push_back(x);
    const auto logits = make_logits(t, f);
    const std::string text = "\\data\\\nngram 1=5\nngram 2=3\n\n\\1-grams:\n-99 <s> -0.3\n-1.0 the -0.2\n"
                             "-1.5 cat -0.1\n-0.8 </s>\n-3.0 <unk>\n\n\\2-grams:\n-0.1 <s> the\n-0.3 the cat\n"
                             "-0.2 cat </s>\n\n\\end\\\n";
    auto lm = arpa_lm::parse(text, "fusion");
    REQUIRE_MESSAGE(lm.has_value(), lm.error().message);

    auto run = [&](const arpa_lm* model, double weight) {
      decoder_options o;
      o.lm_weight = weight;
      auto dec = beam_search_decoder::create(t, o, model);
      REQUIRE(dec.has_value());
      REQUIRE(dec->accept(logits, n_frames_of(t, logits)).has_value());
      return dec->finalize();
    };
    CHECK(run(nullptr, 0.5).text == "the kat");
    CHECK(run(&*lm, 0.5).text == "the cat");
    // With weight 0 the LM changes nothing.
    CHECK(run(&*lm, 0.0).text == "the kat");

    // The LM scores a word when it is closed: before the end, "kat" and "cat" are still unscored
    // words in progress and the partial result follows the audio.
    decoder_options o;
    auto dec = beam_search_decoder::create(t, o, &*lm);
    REQUIRE(dec.has_value());
    REQUIRE(dec->accept(logits, n_frames_of(t, logits)).has_value());
    CHECK(dec->partial().text == "the kat");
    CHECK(dec->finalize().text == "the cat");
  }

  TEST_CASE("lm: the word insertion bonus is paid per word the LM scores") {
    // Certain frames (every other token is pruned), so each run scores the one path "a b".
    const auto& t = recipe_tokens();
    std::vector<frame_probs> certain;
    for (char c : std::string_view("_a_ _b_")) certain.push_back({{{c, 1.0f}}});
    const auto logits = make_logits(t, certain);
    const auto lm = load(tiny_path);
    auto score_with = [&](double bonus) {
      decoder_options o;
      o.word_insertion_bonus = bonus;
      o.lm_weight = 1.0;
      auto dec = beam_search_decoder::create(t, o, &lm);
      REQUIRE(dec.has_value());
      REQUIRE(dec->accept(logits, n_frames_of(t, logits)).has_value());
      return dec->finalize();
    };
    const auto base = score_with(0.0);
    CHECK(base.text == "a b");
    CHECK(score_with(1.5).score == doctest::Approx(base.score + 2 * 1.5).epsilon(1e-9));
    // And the score is the LM's: ln P(a | <s>) + ln P(b | <s> a) + ln P(</s> | a b), acoustically ~1.
    const double lm_log10 = -0.2 + -0.1 + (-0.25 - 0.3);
    CHECK(base.score == doctest::Approx(lm_log10 * std::numbers::ln10).epsilon(1e-4));
  }
}
