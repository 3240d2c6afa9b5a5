#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>

#include "decoder_test_util.hpp"
#include "moe/decoder/beam_search_decoder.hpp"
#include "moe/decoder/greedy_decoder.hpp"

using namespace sluice;
using namespace sluice::moe;
using namespace sluice::moe::test;

namespace {

decode_result beam(const std::vector<float>& logits, const decoder_options& o = {}, const arpa_lm* lm = nullptr,
                   context_graph hotwords = {}) {
  const auto& t = recipe_tokens();
  auto dec = beam_search_decoder::create(t, o, lm, std::move(hotwords));
  REQUIRE_MESSAGE(dec.has_value(), dec.error().message);
  auto ok = dec->accept(logits, n_frames_of(t, logits));
  REQUIRE_MESSAGE(ok.has_value(), ok.error().message);
  return dec->finalize();
}

decode_result greedy(const std::vector<float>& logits) {
  const auto& t = recipe_tokens();
  auto r = greedy_decode(logits, n_frames_of(t, logits), t);
  REQUIRE(r.has_value());
  return *r;
}

// Random but reproducible logits: every frame favours blank a little, so the output has words.
std::vector<float> random_logits(uint32_t seed, int32_t n_frames, float spread) {
  const auto& t = recipe_tokens();
  std::mt19937 rng(seed);
  std::vector<float> out;
  for (int32_t f = 0; f < n_frames; ++f)
    for (int32_t v = 0; v < t.size(); ++v) {
      const float u = static_cast<float>(rng()) / static_cast<float>(std::mt19937::max());
      out.push_back(spread * u + (v == t.blank_id() ? spread / 2 : 0.0f));
    }
  return out;
}

std::span<const float> frames_of(const std::vector<float>& logits, int32_t first, int32_t count) {
  const auto v = static_cast<std::size_t>(recipe_tokens().size());
  return std::span<const float>(logits).subspan(static_cast<std::size_t>(first) * v, static_cast<std::size_t>(count) * v);
}

}  // namespace

TEST_SUITE("decoder") {
  TEST_CASE("beam: on peaky logits the beam search gives the greedy result, times and all") {
    for (const char* spec : {"_hh_e_ll_lo__ _ww_o_r_ld_", "_c_a_ll_ _m_e_", "aa_a", "____", ""}) {
      CAPTURE(spec);
      const auto logits = peaky_logits(recipe_tokens(), spec);
      const auto b = beam(logits);
      const auto g = greedy(logits);
      CHECK(b.text == g.text);
      CHECK(b.tokens == g.tokens);
      CHECK(b.words == g.words);
    }
  }

  TEST_CASE("beam: summing over alignments beats the best path (the classic two-frame case)") {
    // Each frame: blank 0.6, 'a' 0.4. Best path "_ _" reads "" (0.36); but "a" has three paths,
    // "aa", "a_", "_a": 0.16 + 0.24 + 0.24 = 0.64.
    const auto logits = make_logits(recipe_tokens(), {{{{'_', 0.6f}, {'a', 0.4f}}}, {{{'_', 0.6f}, {'a', 0.4f}}}});
    CHECK(greedy(logits).text.empty());
    const auto b = beam(logits);
    CHECK(b.text == "a");
    CHECK(b.score == doctest::Approx(std::log(0.64)).epsilon(1e-4));
    // The best single path of "a" ("a_" and "_a" tie; staying wins ties, so the spike is late).
    REQUIRE(b.words.size() == 1);
    CHECK(b.words[0].confidence == doctest::Approx(0.4).epsilon(1e-4));
  }

  TEST_CASE("beam: with a wide beam it finds the most probable labelling that brute force finds") {
    // Frames over {blank, a, b} only; brute force sums all 3^T paths per collapsed labelling.
    const auto& t = recipe_tokens();
    const int32_t n = 6;
    const char sym[3] = {'_', 'a', 'b'};
    for (uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
      CAPTURE(seed);
      std::mt19937 rng(seed);
      std::vector<frame_probs> frames;
      std::vector<std::array<double, 3>> p(n);
      for (int32_t f = 0; f < n; ++f) {
        double sum = 0;
        for (double& x : p[static_cast<std::size_t>(f)]) sum += (x = 0.05 + static_cast<double>(rng()) / std::mt19937::max());
        frame_probs fp;
        for (int k = 0; k < 3; ++k) {
          p[static_cast<std::size_t>(f)][static_cast<std::size_t>(k)] /= sum;
          fp.probs.push_back({sym[k], static_cast<float>(p[static_cast<std::size_t>(f)][static_cast<std::size_t>(k)])});
        }
        frames.push_back(fp);
      }
      std::map<std::string, double> labelling;
      int32_t paths = 1;
      for (int32_t f = 0; f < n; ++f) paths *= 3;
      for (int32_t code = 0; code < paths; ++code) {
        std::string label;
        double prob = 1;
        int prev = 0;
        for (int32_t f = 0, c = code; f < n; ++f, c /= 3) {
          const int k = c % 3;
          prob *= p[static_cast<std::size_t>(f)][static_cast<std::size_t>(k)];
          if (k != 0 && k != prev) label += sym[k];
          prev = k;
        }
        labelling[label] += prob;
      }
      auto best = std::max_element(labelling.begin(), labelling.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      decoder_options o;
      o.beam_size = 1000;
      o.max_tokens_per_frame = 3;
      const auto b = beam(make_logits(t, frames), o);
      CHECK(b.text == best->first);
      CHECK(b.score == doctest::Approx(std::log(best->second)).epsilon(1e-4));
    }
  }

  TEST_CASE("beam: streaming in any chunking equals whole-utterance decoding, partials included") {
    const auto& t = recipe_tokens();
    const int32_t n = 80;
    const auto logits = random_logits(7, n, 6.0f);
    decoder_options o;
    o.beam_size = 4;
    // Reference: frame by frame, remembering the partial result after every frame.
    auto ref = beam_search_decoder::create(t, o);
    REQUIRE(ref.has_value());
    std::vector<decode_result> partial_at(static_cast<std::size_t>(n) + 1);
    for (int32_t f = 0; f < n; ++f) {
      REQUIRE(ref->accept(frames_of(logits, f, 1), 1).has_value());
      partial_at[static_cast<std::size_t>(f) + 1] = ref->partial();
    }
    const auto whole = beam(logits, o);
    CHECK_FALSE(whole.text.empty());
    const auto ref_final = ref->finalize();
    CHECK(ref_final.text == whole.text);
    CHECK(ref_final.score == whole.score);

    std::mt19937 rng(11);
    for (int trial = 0; trial < 8; ++trial) {
      CAPTURE(trial);
      auto dec = beam_search_decoder::create(t, o);
      REQUIRE(dec.has_value());
      for (int32_t f = 0; f < n;) {
        const int32_t m = std::min<int32_t>(n - f, trial == 0 ? n : 1 + static_cast<int32_t>(rng() % 9));
        REQUIRE(dec->accept(frames_of(logits, f, m), m).has_value());
        f += m;
        const auto p = dec->partial();
        const auto& want = partial_at[static_cast<std::size_t>(f)];
        CHECK(p.text == want.text);
        CHECK(p.words == want.words);
        CHECK(p.score == want.score);
      }
      const auto r = dec->finalize();
      CHECK(r.text == whole.text);
      CHECK(r.tokens == whole.tokens);
      CHECK(r.words == whole.words);
      CHECK(r.score == whole.score);
    }
  }

  TEST_CASE("beam: finalize starts the next utterance and keeps times absolute") {
    const auto& t = recipe_tokens();
    const auto logits = peaky_logits(t, "_h_i_");
    auto dec = beam_search_decoder::create(t, {});
    REQUIRE(dec.has_value());
    REQUIRE(dec->accept(logits, 5).has_value());
    CHECK(dec->partial().text == "hi");
    const auto first = dec->finalize();
    CHECK(dec->frames() == 0);
    CHECK(dec->hypotheses() == 1);
    CHECK(dec->partial().text.empty());
    REQUIRE(dec->accept(logits, 5).has_value());
    const auto second = dec->finalize();
    CHECK(second.text == "hi");
    REQUIRE(second.words.size() == 1);
    CHECK(second.words[0].start_ms == first.words[0].start_ms + 5 * 40);
    dec->set_frame_offset(1000);
    REQUIRE(dec->accept(logits, 5).has_value());
    CHECK(dec->finalize().words[0].start_ms == (1000 + 1) * 40);
  }

  TEST_CASE("beam: token pruning keeps the best token even below the floor") {
    // Every token equally likely (ln 1/29 < floor): the search still moves through the frames.
    const auto& t = recipe_tokens();
    std::vector<float> flat(static_cast<std::size_t>(3 * t.size()), 0.0f);
    decoder_options o;
    o.token_min_log_prob = -1.0;
    auto dec = beam_search_decoder::create(t, o);
    REQUIRE(dec.has_value());
    REQUIRE(dec->accept(flat, 3).has_value());
    CHECK(dec->frames() == 3);
    CHECK(dec->finalize().text.empty());  // ties go to the lowest id: the blank
  }

  TEST_CASE("beam: bad input and options are errors") {
    const auto& t = recipe_tokens();
    decoder_options o;
    o.beam_size = 0;
    auto bad = beam_search_decoder::create(t, o);
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().code == errc::invalid_config);
    CHECK(bad.error().message.find("beam_size") != std::string::npos);
    auto dec = beam_search_decoder::create(t, {});
    REQUIRE(dec.has_value());
    std::vector<float> logits(static_cast<std::size_t>(t.size()) * 2 + 1, 0.0f);
    auto r = dec->accept(logits, 2);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == errc::invalid_argument);
    CHECK(dec->frames() == 0);
  }
}
