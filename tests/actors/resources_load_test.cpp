// engine_resources::load: the model, word LM and post-processing read on three threads (what
// `sluice transcribe` and `sluice serve` start with) give the resources create() builds from
// the same files one after the other, and the same errors.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "actors/engine_resources.hpp"
#include "tests/actors/engine_test_util.hpp"
#include "tests/common/audio_tools.hpp"

using namespace sluice;

namespace {

std::vector<moe::postproc::spoken_word> sample_words() {
  std::vector<moe::postproc::spoken_word> words;
  for (const auto* w : {"hello", "my", "name", "is", "anna", "i", "am", "calling", "about", "my", "bill", "from",
                        "march", "the", "tenth", "for", "twenty", "dollars", "can", "you", "help", "me"})
    words.push_back({w, 0, 0, 1.0f});
  return words;
}

// A copy of the default model's directory whose lm.arpa is `lm_text` (the model files as they are).
std::string model_copy_with_lm(test::temp_dir& tmp, const std::string& lm_text) {
  const std::filesystem::path dir = tmp.file("model");
  std::filesystem::create_directories(dir);
  for (const auto& e : std::filesystem::directory_iterator(test::default_model_dir()))
    if (e.is_regular_file() && e.path().filename() != "lm.arpa") std::filesystem::copy_file(e.path(), dir / e.path().filename());
  std::ofstream(dir / "lm.arpa") << lm_text;
  return dir.string();
}

}  // namespace

TEST_SUITE("engine") {
  TEST_CASE("resources load: the model, LM, vocabulary and punctuation read in parallel equal create()'s, and transcribe alike") {
    auto cfg = test::base_config();
    cfg.postproc.punct_model = SLUICE_SOURCE_DIR "/models/punct";
    auto seq = actors::engine_resources::create(cfg, test::default_model());
    REQUIRE_MESSAGE(seq.has_value(), seq.error().message);
    auto par = actors::engine_resources::load(cfg);
    REQUIRE_MESSAGE(par.has_value(), par.error().message);
    const auto& a = **seq;
    const auto& b = **par;
    CHECK(b.model != a.model);  // read again, not the cached test model
    REQUIRE(a.lm != nullptr);
    REQUIRE(b.lm != nullptr);
    CHECK(b.lm->order() == a.lm->order());
    for (int32_t n = 1; n <= a.lm->order(); ++n) CHECK(b.lm->ngram_count(n) == a.lm->ngram_count(n));
    CHECK(b.decoder_mode == a.decoder_mode);
    REQUIRE(a.lexicon != nullptr);
    REQUIRE(b.lexicon != nullptr);
    CHECK(b.lexicon->words() == a.lexicon->words());
    CHECK(b.recognizer->lm == b.lm);
    // Post-processing with the punctuation model in both (the rules would punctuate these words
    // otherwise: punct_hook_test checks that the two differ).
    REQUIRE(a.postproc != nullptr);
    REQUIRE(b.postproc != nullptr);
    const auto words = sample_words();
    const auto expected = a.postproc->run(words, {}, true).display_text;
    CHECK(b.postproc->run(words, {}, true).display_text == expected);
    const moe::postproc::postprocessor rules(std::make_shared<const moe::postproc::itn_grammar>(a.postproc->grammar()));
    CHECK(rules.run(words, {}, true).display_text != expected);
    // The same words for speech: the first four segments of the bundled call, each decoded with
    // each side's model, LM and vocabulary.
    const auto segs = test::call_segments();
    REQUIRE(segs.size() >= 4);
    for (std::size_t i = 0; i < 4; ++i) {
      CAPTURE(i);
      const auto want = test::reference_text(a, segs[i].samples);
      CHECK_FALSE(want.empty());
      CHECK(test::reference_text(b, segs[i].samples) == want);
    }
  }

  TEST_CASE("resources load: without the LM, with a missing model, a corrupt LM or a bad punctuation model it fails as create() does") {
    auto cfg = test::base_config();
    {
      auto r = actors::engine_resources::load(cfg, /*use_lm=*/false);
      REQUIRE_MESSAGE(r.has_value(), r.error().message);
      CHECK((*r)->lm == nullptr);
    }
    {
      auto missing = cfg;
      missing.model.dir = SLUICE_SOURCE_DIR "/no/such/model";
      auto r = actors::engine_resources::load(missing);
      REQUIRE_FALSE(r.has_value());
      auto direct = moe::load_model(missing.model.dir);
      REQUIRE_FALSE(direct.has_value());
      CHECK(r.error().message == direct.error().message);
    }
    {
      test::temp_dir tmp;
      auto corrupt = cfg;
      corrupt.model.dir = model_copy_with_lm(tmp, "\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0\thello\n");
      auto r = actors::engine_resources::load(corrupt);
      REQUIRE_FALSE(r.has_value());
      auto model = moe::load_model(corrupt.model.dir);
      REQUIRE_MESSAGE(model.has_value(), model.error().message);
      auto s = actors::engine_resources::create(corrupt, *model);
      REQUIRE_FALSE(s.has_value());
      CHECK(r.error().code == s.error().code);
      CHECK(r.error().message == s.error().message);
      CHECK(r.error().message.find("lm.arpa") != std::string::npos);
    }
    {
      auto bad = cfg;
      bad.postproc.punct_model = SLUICE_SOURCE_DIR "/no/such/punct";
      auto r = actors::engine_resources::load(bad);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().code == errc::invalid_config);
      CHECK(r.error().message.find("postproc.punct_model") != std::string::npos);
    }
    {
      // Both wrong: the configuration error first, as create() orders them (before the LM).
      auto both = cfg;
      both.engine.expert_shards = 1000;
      both.postproc.punct_model = SLUICE_SOURCE_DIR "/no/such/punct";
      auto r = actors::engine_resources::load(both);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().message.find("engine.expert_shards") != std::string::npos);
    }
  }
}
