#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "decoder_test_util.hpp"
#include "moe/decoder/greedy_decoder.hpp"

using namespace sluice;
using namespace sluice::moe;
using namespace sluice::moe::test;

namespace {

constexpr double frame_ms = 40.0;

decode_result greedy(std::string_view spec) {
  const auto& t = recipe_tokens();
  auto logits = peaky_logits(t, spec);
  auto r = greedy_decode(logits, n_frames_of(t, logits), t);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return *r;
}

}  // namespace

TEST_SUITE("decoder") {
  TEST_CASE("greedy: repeats merge, a blank separates repeated letters, spaces split words") {
    //                   frame: 0123456789012345678901234
    const auto r = greedy("_hh_e_ll_lo__ _ww_o_r_ld_");
    CHECK(r.text == "hello world");
    REQUIRE(r.words.size() == 2);
    // "hello": 'h' first at frame 1, 'o' last at frame 10.
    CHECK(r.words[0].word == "hello");
    CHECK(r.words[0].start_ms == 1 * 40);
    CHECK(r.words[0].end_ms == (10 + 1) * 40);
    // "world": 'w' frames 15-16, 'd' at frame 23.
    CHECK(r.words[1].word == "world");
    CHECK(r.words[1].start_ms == 15 * 40);
    CHECK(r.words[1].end_ms == (23 + 1) * 40);
    CHECK(r.words[0].confidence == doctest::Approx(peak_prob).epsilon(1e-5));
    const auto& t = recipe_tokens();
    auto expect = t.encode("hello world");
    REQUIRE(expect.has_value());
    CHECK(r.tokens == *expect);
  }

  TEST_CASE("greedy: repeated letters without a blank between collapse") {
    CHECK(greedy("_lll_ooo_").text == "lo");
    CHECK(greedy("l_l").text == "ll");
    CHECK(greedy("_________").text.empty());
    CHECK(greedy("").words.empty());
  }

  TEST_CASE("greedy: leading, trailing and repeated spaces give no empty words") {
    const auto r = greedy("  _a_  _ _b_ ");
    CHECK(r.text == "a b");
    REQUIRE(r.words.size() == 2);
    CHECK(r.words[1].start_ms == 10 * 40);
    CHECK(r.words[1].end_ms == 11 * 40);
  }

  TEST_CASE("greedy: a word's confidence is its least sure token's peak posterior") {
    const auto& t = recipe_tokens();
    auto logits = make_logits(t, {{{{'_', 0.9f}}}, {{{'c', 0.5f}, {'k', 0.3f}}}, {{{'c', 0.7f}}},
                                  {{{'a', 0.8f}}}, {{{'t', 0.95f}}}, {{{'_', 0.9f}}}});
    auto r = greedy_decode(logits, 6, t);
    REQUIRE(r.has_value());
    CHECK(r->text == "cat");
    // 'c' spans frames 1-2 with peak 0.7; 'a' 0.8; 't' 0.95 -> the word is 0.7.
    REQUIRE(r->words.size() == 1);
    CHECK(r->words[0].confidence == doctest::Approx(0.7).epsilon(1e-4));
    CHECK(r->words[0].start_ms == 40);
    CHECK(r->words[0].end_ms == 5 * 40);
    // The score is the best path's ln probability.
    const double want = std::log(0.9) + std::log(0.5) + std::log(0.7) + std::log(0.8) + std::log(0.95) + std::log(0.9);
    CHECK(r->score == doctest::Approx(want).epsilon(1e-5));
  }

  TEST_CASE("greedy: streaming in any chunking equals whole, and times stay absolute") {
    const auto& t = recipe_tokens();
    const std::string spec = "_hh_i_ _tt_h_e_r_e_";
    auto logits = peaky_logits(t, spec);
    const int32_t n = n_frames_of(t, logits);
    const auto whole = greedy(spec);
    for (int32_t chunk : {1, 2, 3, 5, 7, 100}) {
      CAPTURE(chunk);
      auto dec = greedy_decoder::create(t, {});
      REQUIRE(dec.has_value());
      for (int32_t f = 0; f < n; f += chunk) {
        const int32_t m = std::min(chunk, n - f);
        REQUIRE(dec->accept(std::span<const float>(logits).subspan(static_cast<std::size_t>(f * t.size()),
                                                                   static_cast<std::size_t>(m * t.size())),
                            m));
      }
      CHECK(dec->partial().words == whole.words);
      const auto r = dec->finalize();
      CHECK(r.words == whole.words);
      CHECK(r.tokens == whole.tokens);
      CHECK(r.score == whole.score);
      // A second utterance's times count from the stream's start.
      REQUIRE(dec->accept(logits, n));
      const auto second = dec->finalize();
      REQUIRE(second.words.size() == whole.words.size());
      CHECK(second.words[0].start_ms == whole.words[0].start_ms + static_cast<int64_t>(n * frame_ms));
      CHECK(dec->frame_offset() == 2 * n);
    }
  }

  TEST_CASE("greedy: frame_ms sets the time scale") {
    const auto& t = recipe_tokens();
    auto logits = peaky_logits(t, "__a_");
    decoder_options o;
    o.frame_ms = 60;
    auto r = greedy_decode(logits, 4, t, o);
    REQUIRE(r.has_value());
    REQUIRE(r->words.size() == 1);
    CHECK(r->words[0].start_ms == 120);
    CHECK(r->words[0].end_ms == 180);
  }

  TEST_CASE("greedy: bad logits and options are errors, not crashes") {
    const auto& t = recipe_tokens();
    auto logits = peaky_logits(t, "_a_");
    auto short_by_one = greedy_decode(std::span<const float>(logits).first(logits.size() - 1), 3, t);
    REQUIRE_FALSE(short_by_one.has_value());
    CHECK(short_by_one.error().code == errc::invalid_argument);
    CHECK(short_by_one.error().message.find("expected 3 frames x 29 tokens") != std::string::npos);
    logits[30] = std::numeric_limits<float>::quiet_NaN();
    auto nan = greedy_decode(logits, 3, t);
    REQUIRE_FALSE(nan.has_value());
    CHECK(nan.error().message.find("frame 1, token 1") != std::string::npos);
    decoder_options o;
    o.frame_ms = 0;
    auto bad = greedy_decoder::create(t, o);
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().code == errc::invalid_config);
    CHECK(bad.error().message.find("frame_ms") != std::string::npos);
  }
}
