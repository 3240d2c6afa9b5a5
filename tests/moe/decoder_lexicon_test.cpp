#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "decoder_test_util.hpp"
#include "moe/decoder/beam_search_decoder.hpp"
#include "moe/decoder/ctc_decoder.hpp"
#include "moe/decoder/lexicon_decoder.hpp"

using namespace sluice;
using namespace sluice::moe;
using namespace sluice::moe::test;

namespace {

word_lexicon lexicon_of(std::vector<std::string> words, const arpa_lm* lm = nullptr) {
  return word_lexicon::build(recipe_tokens(), lm, words, /*with_lm_unigrams=*/false);
}

decode_result lexicon_decode(const std::vector<float>& logits, const word_lexicon& lex, const arpa_lm* lm = nullptr,
                             context_graph hotwords = {}, const word_lexicon* extra = nullptr,
                             const decoder_options& o = {}) {
  const auto& t = recipe_tokens();
  auto dec = lexicon_decoder::create(t, o, lexicon_view(&lex, extra), lm, std::move(hotwords));
  REQUIRE_MESSAGE(dec.has_value(), dec.error().message);
  auto ok = dec->accept(logits, n_frames_of(t, logits));
  REQUIRE_MESSAGE(ok.has_value(), ok.error().message);
  return dec->finalize();
}

// The lexicon decoder fed `chunk` frames at a time, a partial read after each.
decode_result lexicon_decode_in_chunks(const std::vector<float>& logits, const word_lexicon& lex, const arpa_lm& lm,
                                       int32_t chunk) {
  const auto& t = recipe_tokens();
  const auto v = static_cast<std::size_t>(t.size());
  auto dec = lexicon_decoder::create(t, {}, lexicon_view(&lex, nullptr), &lm);
  REQUIRE(dec.has_value());
  const int32_t n = n_frames_of(t, logits);
  for (int32_t f = 0; f < n; f += chunk) {
    const int32_t k = std::min(chunk, n - f);
    REQUIRE(dec->accept(std::span<const float>(logits).subspan(f * v, k * v), k).has_value());
    (void)dec->partial();
  }
  return dec->finalize();
}

std::string beam_text(const std::vector<float>& logits) {
  const auto& t = recipe_tokens();
  auto dec = beam_search_decoder::create(t, {});
  REQUIRE(dec.has_value());
  REQUIRE(dec->accept(logits, n_frames_of(t, logits)).has_value());
  return dec->finalize().text;
}

}  // namespace

TEST_SUITE("decoder") {
  TEST_CASE("lexicon: words are split where the vocabulary says, without the model's <space>") {
    // t h a n k y o u, one peaky frame per letter and blanks between; no <space> anywhere.
    const auto logits = peaky_logits(recipe_tokens(), "_t_h_a_n_k_y_o_u_");
    REQUIRE(beam_text(logits) == "thankyou");  // what the model's spaces alone give
    const auto lex = lexicon_of({"thank", "thanks", "you", "your"});
    const auto r = lexicon_decode(logits, lex);
    CHECK(r.text == "thank you");
    REQUIRE(r.words.size() == 2);
    // Times from the spikes (40 ms frames): "thank" is frames 1..9, "you" frames 11..15.
    CHECK(r.words[0] == word_info{"thank", 40, 400, peak_prob});
    CHECK(r.words[1] == word_info{"you", 440, 640, peak_prob});
  }

  TEST_CASE("lexicon: the model's <space> is taken where it is, and never splits a word in two") {
    const auto logits = peaky_logits(recipe_tokens(), "_t_h_a_n_k_ _y_o_u_");
    const auto lex = lexicon_of({"thank", "you"});
    CHECK(lexicon_decode(logits, lex).text == "thank you");
  }

  // "_a?b_" with the middle frame torn between blank (0.5) and <space> (0.45), no LM, a word bonus
  // of -0.5: "ab" is one word (-0.5) read through the blank only; "a b" two words (-1.0) read
  // through the blank or the <space>, ln(0.95 / 0.5) = 0.64 more acoustic score, so "a b" wins by
  // 0.14. Were the <space> a label of its own, "a b" with and without it would be two hypotheses
  // of ln(0.5) and ln(0.45), each below "ab" (the decoder before session 29 said "ab").
  TEST_CASE("lexicon: a <space> between words is read as a blank of the same words' hypothesis") {
    auto frames = peaky_frames("_a");
    frames.push_back({{{'_', 0.5f}, {' ', 0.45f}}});
    for (const auto& f : peaky_frames("b_")) frames.push_back(f);
    const auto logits = make_logits(recipe_tokens(), frames);
    const auto lex = lexicon_of({"a", "b", "ab"});
    decoder_options o;
    o.lexicon_word_bonus = -0.5;
    const auto r = lexicon_decode(logits, lex, nullptr, {}, nullptr, o);
    CHECK(r.text == "a b");
    REQUIRE(r.words.size() == 2);
    CHECK(r.words[0].start_ms == 40);   // 'a' at frame 1, 'b' at frame 3 (40 ms frames)
    CHECK(r.words[1].start_ms == 120);
    // Its score: the peaky frames, the middle frame's blank + <space> mass, two word bonuses (the
    // other alignments, through the letters' ~0.0018 of the peaky frames' rest, add < 0.01).
    const double want = 4 * std::log(double{peak_prob}) + std::log(0.95) - 1.0;
    CHECK(std::abs(r.score - want) < 0.01);
    // With a word bonus of -0.7 the second word costs more than the <space> gives: "ab".
    o.lexicon_word_bonus = -0.7;
    CHECK(lexicon_decode(logits, lex, nullptr, {}, nullptr, o).text == "ab");
  }

  // A beam of 2, no LM, word bonus -0.1: "ab" and "a b" have the same future once 'b' is read
  // (no LM state, a word boundary, last token 'b'), so only "ab" (-0.1, better than -0.2) stays.
  // Then the frame torn between 'c' (0.5) and 'd' (0.4): without recombination the two slots
  // would go to "ab c" and "a b c" (ln 0.5 - 0.2 = -0.89 beats "ab d", ln 0.4 - 0.1 = -1.02),
  // and the next frame's 'e' ("de" is a word, "cz" the only word starting with 'c') would find no
  // 'd' to follow. With it the slots hold "ab c" and "ab d", and "ab de" comes out.
  TEST_CASE("lexicon: readings with the same future are recombined, so the beam holds different ones") {
    auto frames = peaky_frames("_a_b_");
    frames.push_back({{{'c', 0.5f}, {'d', 0.4f}}});
    for (const auto& f : peaky_frames("_e_")) frames.push_back(f);
    const auto logits = make_logits(recipe_tokens(), frames);
    const auto lex = lexicon_of({"a", "b", "ab", "de", "cz"});
    decoder_options o;
    o.lexicon_word_bonus = -0.1;
    o.lexicon_beam_size = 2;
    CHECK(lexicon_decode(logits, lex, nullptr, {}, nullptr, o).text == "ab de");
    o.lexicon_beam_size = 8;  // a wide beam finds it either way
    CHECK(lexicon_decode(logits, lex, nullptr, {}, nullptr, o).text == "ab de");
  }

  TEST_CASE("lexicon: the word LM decides between two spellings the audio cannot tell apart") {
    const auto lm = parse_lm(see_sea_arpa);
    const auto lex = word_lexicon::build(recipe_tokens(), &lm, {});
    CHECK(lex.words() == 4);  // i, the, sea, see: <s>, </s>, <unk> are not words
    CHECK(lexicon_decode(see_or_sea("_i_"), lex, &lm).text == "i see");
    CHECK(lexicon_decode(see_or_sea("_t_h_e_"), lex, &lm).text == "the sea");
  }

  TEST_CASE("lexicon: a clearly spelled unknown word comes out through the OOV path, a weak one does not") {
    const auto lex = lexicon_of({"my", "name", "is"});
    SUBCASE("clear, at the end") {
      // Each letter of "zorg" has 0.9 against blank's 0.1/28: dropping the four letters would cost
      // about 4 * ln(0.9 / 0.0036) = 22 in ln, more than oov_penalty + 4 * oov_letter_penalty = 14.
      const auto logits = peaky_logits(recipe_tokens(), "_m_y_ _n_a_m_e_ _i_s_ _z_o_r_g_");
      CHECK(lexicon_decode(logits, lex).text == "my name is zorg");
    }
    SUBCASE("clear, ended by the model's <space>, followed by a vocabulary word") {
      const auto logits = peaky_logits(recipe_tokens(), "_i_s_ _z_o_r_g_ _m_y_");
      CHECK(lexicon_decode(logits, lex).text == "is zorg my");
    }
    SUBCASE("weak") {
      // Each letter frame: the letter 0.5, blank 0.4. The letters are still the best tokens (the
      // plain beam search spells them) but only worth 4 * ln(0.5 / 0.4) = 0.9 over blanks, less
      // than any OOV reading's penalty (8 + 1.5 per letter).
      auto frames = peaky_frames("_m_y_ _n_a_m_e_ _i_s_ ");
      for (char c : std::string("zorg")) frames.push_back({{{c, 0.5f}, {'_', 0.4f}}});
      const auto logits = make_logits(recipe_tokens(), frames);
      REQUIRE(beam_text(logits) == "my name is zorg");
      CHECK(lexicon_decode(logits, lex).text == "my name is");
    }
  }

  TEST_CASE("lexicon: a hotword wins only with biasing, also across boundaries the model did not mark") {
    // "my name is ca?l" with no <space>: the torn frame leans to 'l' (0.5) over 'r' (0.4), so
    // "call" beats "carl" by ln(0.5 / 0.4) unless "carl" is biased.
    auto frames = peaky_frames("_m_y_n_a_m_e_i_s_c_a_");
    frames.push_back({{{'l', 0.5f}, {'r', 0.4f}}});
    for (const auto& f : peaky_frames("_l_")) frames.push_back(f);
    const auto logits = make_logits(recipe_tokens(), frames);
    const auto base = lexicon_of({"my", "name", "is", "call"});
    const auto request = lexicon_of({"carl"});
    const std::vector<hotword> carl{{"carl", 3.0f}};
    auto graph = context_graph::build(carl, recipe_tokens());
    REQUIRE(graph.has_value());
    CHECK(lexicon_decode(logits, base, nullptr, {}, &request).text == "my name is call");
    CHECK(lexicon_decode(logits, base, nullptr, *graph, &request).text == "my name is carl");
    // An unrelated hotword changes nothing.
    const auto other_words = lexicon_of({"vanderbilt"});
    const std::vector<hotword> other{{"vanderbilt", 3.0f}};
    auto other_graph = context_graph::build(other, recipe_tokens());
    REQUIRE(other_graph.has_value());
    CHECK(lexicon_decode(logits, base, nullptr, *other_graph, &other_words).text == "my name is call");
  }

  TEST_CASE("lexicon: results do not depend on how the frames are split into chunks") {
    const auto& t = recipe_tokens();
    const auto logits = see_or_sea("_t_h_e_");
    const auto lm = parse_lm(see_sea_arpa);
    const auto lex = word_lexicon::build(t, &lm, {});
    const auto whole = lexicon_decode(logits, lex, &lm);
    for (int32_t chunk : {1, 2, 5}) {
      CAPTURE(chunk);
      const auto r = lexicon_decode_in_chunks(logits, lex, lm, chunk);
      CHECK(r.text == whole.text);
      CHECK(r.words == whole.words);
      CHECK(r.score == whole.score);
    }
  }

  // Real CTC output is mostly frames where blank is all but certain. When every other token is
  // more than the decoder's token beam (8 nats) below blank, the decoder moves its hypotheses one
  // frame on without the general step; here those frames give blank 0.99999 (the rest ~14.8 nats
  // below it). The same utterance whose blank frames keep one never-spelled letter ('q') 7.5 nats
  // below blank takes the general step on every frame: same words and times, and a score that
  // differs only by the blank mass 'q' takes (5.5e-4 per frame). The token beam is a constant of
  // lexicon_decoder.cpp (8 nats); were it below 7.5, both inputs would take the fast path.
  TEST_CASE("lexicon: frames where only blank is within reach give the general step's words and times, its score up to the blank mass, in any chunking") {
    const auto& t = recipe_tokens();
    const auto lm = parse_lm(see_sea_arpa);
    const auto lex = word_lexicon::build(t, &lm, {});
    const std::string spec = "____t_h_e______s_e_a____";
    const float q = std::exp(-7.5f);
    std::vector<frame_probs> fast, general;
    for (char c : spec) {
      if (c == '_') {
        fast.push_back({{{'_', 0.99999f}}});
        general.push_back({{{'_', 0.99999f - q}, {'q', q}}});
      } else {
        fast.push_back({{{c, peak_prob}}});
        general.push_back({{{c, peak_prob}}});
      }
    }
    const auto fast_logits = make_logits(t, fast);
    const auto general_logits = make_logits(t, general);
    const auto a = lexicon_decode(fast_logits, lex, &lm);
    const auto b = lexicon_decode(general_logits, lex, &lm);
    CHECK(a.text == "the sea");
    CHECK(a.text == b.text);
    CHECK(a.words == b.words);
    REQUIRE(a.words.size() == 2);
    // "the": t at frame 4, e at frame 8; "sea": s at 15, a at 19 (40 ms frames).
    CHECK(a.words[0].start_ms == 4 * 40);
    CHECK(a.words[0].end_ms == 9 * 40);
    CHECK(a.words[1].start_ms == 15 * 40);
    CHECK(a.words[1].end_ms == 20 * 40);
    const double blank_frames = 18;
    CHECK(a.score > b.score);
    CHECK(a.score - b.score < blank_frames * 2 * q);
    for (int32_t chunk : {1, 3, 7}) {
      CAPTURE(chunk);
      const auto r = lexicon_decode_in_chunks(fast_logits, lex, lm, chunk);
      CHECK(r.text == a.text);
      CHECK(r.words == a.words);
      CHECK(r.score == a.score);
    }
  }

  // Noisy utterances of words of an LM (build_lm.py's model, below), its whole vocabulary as the
  // lexicon: every frame's letter is uncertain, with two to four rivals (letters, blank, <space>)
  // of random weight, so hypotheses compete, beams fill and many extensions fall below the
  // floor. Decoded frame by frame with a partial every fifth, once skipping them and once not: every
  // partial and final must be the same, text, word times and score, and so must every frame's
  // kept hypotheses (labels and totals, in order).
  struct skip_counts {
    int64_t skipped = 0, compared = 0, kept_compared = 0;
  };
  skip_counts compare_skipping(const arpa_lm& lm, std::size_t min_words) {
    const auto& t = recipe_tokens();
    const auto lex = word_lexicon::build(t, &lm, {});
    std::vector<std::string> vocab;
    for (int32_t w = 0; w < lm.vocab_size(); ++w) {
      const std::string word(lm.word(w));
      if (word.find_first_not_of("abcdefghijklmnopqrstuvwxyz'") == std::string::npos) vocab.push_back(word);
    }
    REQUIRE(vocab.size() >= min_words);
    const std::string rivals = "abcdefghijklmnopqrstuvwxyz_ ";
    const auto v = static_cast<std::size_t>(t.size());
    skip_counts n;
    int64_t& skipped = n.skipped;
    int64_t& compared = n.compared;
    int64_t& kept_compared = n.kept_compared;
    for (uint32_t seed = 1; seed <= 6; ++seed) {
      std::mt19937 rng(seed);
      auto uniform = [&](float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); };
      auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
      std::vector<frame_probs> frames;
      auto noisy = [&](char c) {
        frame_probs f{{{c, uniform(0.35f, 0.9f)}}};
        float left = 1.0f - f.probs[0].second;
        for (std::size_t r = 0, n = 2 + pick(3); r < n; ++r) {
          const char other = rivals[pick(rivals.size())];
          if (std::any_of(f.probs.begin(), f.probs.end(), [&](const auto& x) { return x.first == other; })) continue;
          const float p = left * uniform(0.2f, 0.6f);
          f.probs.push_back({other, p});
          left -= p;
        }
        frames.push_back(f);
      };
      for (int w = 0; w < 10; ++w) {
        for (char c : vocab[pick(vocab.size())]) {
          for (std::size_t k = 0, n = 1 + pick(2); k < n; ++k) noisy(c);
          for (std::size_t k = 0, n = pick(3); k < n; ++k) noisy('_');
        }
        if (pick(3) == 0) noisy(' ');
        noisy('_');
      }
      const auto logits = make_logits(t, frames);
      const int32_t n = n_frames_of(t, logits);
      for (const auto& [beam, word_bonus] : {std::pair{4, -0.5}, std::pair{12, -0.5}, std::pair{28, -0.5},
                                             std::pair{12, 2.0}, std::pair{28, 2.0}}) {
        CAPTURE(seed);
        CAPTURE(beam);
        CAPTURE(word_bonus);  // a positive bonus: extensions may gain it (slack)
        decoder_options o;
        o.lexicon_beam_size = beam;
        o.lexicon_word_bonus = word_bonus;
        auto fast = lexicon_decoder::create(t, o, lexicon_view(&lex, nullptr), &lm);
        auto full = lexicon_decoder::create(t, o, lexicon_view(&lex, nullptr), &lm);
        REQUIRE((fast.has_value() && full.has_value()));
        full->set_skip_hopeless(false);
        // Every frame's kept hypotheses (labels and totals, in order) must be the same: a wrong
        // skip shows there even when the best one, and so the partial, does not change.
        for (int32_t f = 0; f < n; ++f) {
          const auto frame = std::span<const float>(logits).subspan(static_cast<std::size_t>(f) * v, v);
          REQUIRE(fast->accept(frame, 1).has_value());
          REQUIRE(full->accept(frame, 1).has_value());
          CAPTURE(f);
          CHECK(fast->kept() == full->kept());
          ++kept_compared;
          if (f % 5 != 4) continue;
          const auto a = fast->partial(), b = full->partial();
          CHECK(a.text == b.text);
          CHECK(a.words == b.words);
          CHECK(a.score == b.score);
          ++compared;
        }
        // A sharp frame: 'e' near 1, blank at 1e-4 (ln -9.2: listed, but beyond the decoder's
        // token beam of 8 below the best, so no hypothesis continues through it) and every other
        // token below token_min_log_prob: only hypotheses ending in 'e' have an own continuation.
        const auto sharp = make_logits(t, {frame_probs{{{'e', 0.9998f}, {'_', 1e-4f}}}});
        REQUIRE(fast->accept(sharp, 1).has_value());
        REQUIRE(full->accept(sharp, 1).has_value());
        CHECK(fast->kept() == full->kept());
        const auto a = fast->finalize(), b = full->finalize();
        CHECK(a.text == b.text);
        CHECK(a.words == b.words);
        CHECK(a.score == b.score);
        CHECK(!a.text.empty());
        CHECK(full->skipped_extensions() == 0);
        skipped += fast->skipped_extensions();
      }
    }
    return n;
  }

  TEST_CASE("lexicon: skipping extensions below the floor changes no kept hypothesis of any frame, no partial or final, only the work") {
    auto lm = arpa_lm::load(SLUICE_TEST_DATA_DIR "/lm/kn3.arpa");
    REQUIRE_MESSAGE(lm.has_value(), lm.error().message);
    const skip_counts n = compare_skipping(*lm, 50);
    MESSAGE(n.kept_compared << " frames' beams and " << n.compared << " partials compared, " << n.skipped
                            << " extensions skipped");
    CHECK(n.kept_compared > 1000);
    CHECK(n.compared > 100);
    CHECK(n.skipped > 1000);  // the floor did skip work in these searches
  }

  TEST_CASE("lexicon: with an LM answering above probability 1 (a backoff weight above 1) skipping stays exact") {
    // Every backoff is 10^1.5, so P(y | x) = 10^(1.5 - 1.0) > 1 for every pair without a bigram.
    const char* arpa = R"(\data\
ngram 1=8
ngram 2=1

\1-grams:
-1.0	</s>
-99	<s>	1.5
-2.0	<unk>
-1.0	cat	1.5
-1.0	dog	1.5
-1.0	sat	1.5
-1.0	ran	1.5
-1.0	mat	1.5

\2-grams:
-0.5	cat sat

\end\
)";
    auto lm = arpa_lm::parse(arpa, "inline");
    REQUIRE_MESSAGE(lm.has_value(), lm.error().message);
    const lm_step after_cat = lm->score(lm->begin_state(), "cat");
    REQUIRE(lm->score(after_cat.next, "dog").log_prob > 0.0f);  // the case this is about
    const skip_counts n = compare_skipping(*lm, 5);
    MESSAGE(n.kept_compared << " frames' beams compared, " << n.skipped << " extensions skipped");
    CHECK(n.kept_compared > 500);
    CHECK(n.skipped > 100);
  }

  TEST_CASE("lexicon: the lexicon file, words the model cannot spell, case folding") {
    const std::string path = "decoder_lexicon_test_words.txt";
    {
      std::ofstream out(path);
      out << "# a comment\nhello HH AH L OW\n\n  World\nna\xc3\xafve\ntwo words\n";
    }
    auto words = word_lexicon::read_words(path);
    REQUIRE(words.has_value());
    CHECK(*words == std::vector<std::string>{"hello", "World", "na\xc3\xafve", "two"});
    const auto lex = lexicon_of(*words);
    CHECK(lex.words() == 3);    // "World" folds to "world"; "naïve" has no tokens
    CHECK(lex.skipped() == 1);
    auto world = recipe_tokens().encode("world");
    REQUIRE(world.has_value());
    CHECK(lex.contains(*world));
    CHECK(!word_lexicon::read_words("/nonexistent/words.txt").has_value());
    std::remove(path.c_str());
  }

  TEST_CASE("lexicon view: one walk by a token answers what step and the node queries answer, base and request words together") {
    // The decoder reads a step's child from the edge it took; the node queries read the node.
    // Every cursor reachable from the root (BFS), every token: the two must agree.
    auto lm = arpa_lm::load(SLUICE_TEST_DATA_DIR "/lm/kn3.arpa");
    REQUIRE_MESSAGE(lm.has_value(), lm.error().message);
    const auto& t = recipe_tokens();
    const auto base = word_lexicon::build(t, &*lm, {});
    // Request words: some the LM lists (so they share nodes with the base), some it does not,
    // a prefix of a base word and a base word's extension.
    std::vector<std::string> asked;
    for (int32_t w = 0; w < lm->vocab_size() && asked.size() < 40; w += 7) {
      const std::string word(lm->word(w));
      if (word.find_first_not_of("abcdefghijklmnopqrstuvwxyz'") != std::string::npos) continue;
      asked.push_back(word);
      asked.push_back(word + "zq");
      if (word.size() > 2) asked.push_back(word.substr(0, word.size() - 1));
    }
    asked.push_back("quoxotl");
    const auto extra = word_lexicon::build(t, &*lm, asked, /*with_lm_unigrams=*/false);
    for (const word_lexicon* request : {static_cast<const word_lexicon*>(nullptr), &extra}) {
      const lexicon_view view(&base, request);
      std::vector<lexicon_cursor> todo{lexicon_cursor{}};
      int64_t checked = 0, words = 0, both = 0;
      while (!todo.empty()) {
        const lexicon_cursor c = todo.back();
        todo.pop_back();
        for (int32_t token = 0; token < t.size(); ++token) {
          const lexicon_view::walked w = view.walk(c, token);
          const lexicon_cursor next = view.step(c, token);
          REQUIRE(w.at == next);
          ++checked;
          if (next.dead()) continue;
          CHECK(w.is_word == view.is_word(next));
          CHECK(w.has_children == view.has_children(next));
          CHECK(w.lm_word == view.lm_word(next));
          CHECK(w.lookahead == view.lookahead(next));
          words += w.is_word;
          both += next.base >= 0 && next.extra >= 0;
          todo.push_back(next);
        }
      }
      MESSAGE(checked << " steps checked, " << words << " word ends, " << both << " in both lexicons");
      CHECK(words >= base.words());
      if (request) CHECK(both > 10);
    }
  }

  TEST_CASE("lexicon: the decoder mode, auto picks lexicon only with a vocabulary") {
    CHECK(resolve_mode("auto", true).value() == decoder_mode::lexicon);
    CHECK(resolve_mode("auto", false).value() == decoder_mode::beam);
    CHECK(resolve_mode("greedy", true).value() == decoder_mode::greedy);
    CHECK(resolve_mode("beam", true).value() == decoder_mode::beam);
    CHECK(resolve_mode("lexicon", true).value() == decoder_mode::lexicon);
    CHECK(!resolve_mode("lexicon", false).has_value());
    CHECK(!resolve_mode("fast", true).has_value());
    // The three decoders behind one interface, on the same logits.
    const auto& t = recipe_tokens();
    const auto logits = peaky_logits(t, "_t_h_a_n_k_y_o_u_");
    const auto lex = lexicon_of({"thank", "you"});
    for (auto [mode, want] : {std::pair{decoder_mode::greedy, "thankyou"}, std::pair{decoder_mode::beam, "thankyou"},
                              std::pair{decoder_mode::lexicon, "thank you"}}) {
      CAPTURE(to_string(mode));
      auto dec = ctc_decoder::create(mode, t, {}, nullptr, lexicon_view(&lex, nullptr));
      REQUIRE(dec.has_value());
      CHECK(dec->mode() == mode);
      REQUIRE(dec->accept(logits, n_frames_of(t, logits)).has_value());
      CHECK(dec->finalize().text == want);
      CHECK(dec->frame_offset() == n_frames_of(t, logits));
    }
  }
}
