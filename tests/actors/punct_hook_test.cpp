// model_punctuation: the punctuation model (moe/punct) as post-processing's hook, and
// [postproc] punct_model selecting it.
#include <doctest/doctest.h>

#include <filesystem>

#include "actors/engine_resources.hpp"
#include "actors/punct_hook.hpp"
#include "tests/actors/engine_test_util.hpp"
#include "tests/common/audio_tools.hpp"

using namespace sluice;
using sluice::moe::postproc::trailing_mark;

namespace {

std::shared_ptr<const moe::punct::punctuator> bundled() {
  static auto m = moe::punct::punctuator::load(SLUICE_SOURCE_DIR "/models/punct");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return std::make_shared<const moe::punct::punctuator>(*m);
}

char to_char(trailing_mark m) {
  switch (m) {
    case trailing_mark::period: return '.';
    case trailing_mark::comma: return ',';
    case trailing_mark::question: return '?';
    default: return 0;
  }
}

}  // namespace

TEST_SUITE("postproc") {
  TEST_CASE("punct hook: the model's marks on every word but the last, which ends a final and stays open in a partial") {
    const std::vector<std::string> words = {"hello", "my", "name", "is", "anna", "i", "am", "calling", "about", "my",
                                            "bill", "can", "you", "help", "me"};
    const auto model = bundled();
    const auto marks = model->run(words);
    actors::model_punctuation hook(model);
    const auto fin = hook.punctuate(words, true);
    const auto part = hook.punctuate(words, false);
    REQUIRE(fin.size() == words.size());
    REQUIRE(part.size() == words.size());
    for (std::size_t i = 0; i + 1 < words.size(); ++i) {
      CHECK(fin[i].capitalize == marks[i].capitalize);
      CHECK(to_char(fin[i].mark) == marks[i].mark);
      CHECK(to_char(part[i].mark) == marks[i].mark);
    }
    CHECK((fin.back().mark == trailing_mark::period || fin.back().mark == trailing_mark::question));
    CHECK(part.back().mark == trailing_mark::none);
    CHECK(hook.punctuate({}, true).empty());
  }

  TEST_CASE("punct hook: a punct_model directory that cannot be loaded fails the engine's resources with its reason") {
    auto cfg = test::base_config();
    cfg.postproc.punct_model = SLUICE_SOURCE_DIR "/no/such/punct";
    auto res = actors::engine_resources::create(cfg, test::default_model());
    REQUIRE_FALSE(res.has_value());
    CHECK(res.error().message.find("punct") != std::string::npos);
  }

  TEST_CASE("punct hook: the default punct_model is models/punct and, missing there, gives the rules") {
    const config::postproc_config defaults;
    CHECK(defaults.punct_model == "models/punct");
    // Tests run in the build tree, where there is no models/punct: the engine starts with rules.
    REQUIRE_FALSE(std::filesystem::exists(defaults.punct_model));
    auto cfg = test::base_config();
    cfg.postproc.punct_model = defaults.punct_model;
    auto res = actors::engine_resources::create(cfg, test::default_model());
    REQUIRE_MESSAGE(res.has_value(), res.error().message);
    REQUIRE((*res)->postproc != nullptr);
    std::vector<moe::postproc::spoken_word> words;
    for (const auto* w : {"hello", "my", "name", "is", "anna", "i", "am", "calling", "about", "my", "bill", "can",
                          "you", "help", "me"})
      words.push_back({w, 0, 0, 1.0f});
    const auto& grammar = (*res)->postproc->grammar();
    auto g = std::make_shared<const moe::postproc::itn_grammar>(grammar);
    const moe::postproc::postprocessor rules(g);
    const moe::postproc::postprocessor model(g, std::make_shared<actors::model_punctuation>(bundled()));
    const auto got = (*res)->postproc->run(words, {}, true).display_text;
    CHECK(got == rules.run(words, {}, true).display_text);
    // The model punctuates these words otherwise, so the check above tells the two apart.
    CHECK(got != model.run(words, {}, true).display_text);
  }

  TEST_CASE("punct hook: a punct_model someone named that is corrupt stops the start with a config error") {
    test::temp_dir tmp;
    test::write_bytes(tmp.file("punct.bin"), {'n', 'o', 't', ' ', 'a', ' ', 'm', 'o', 'd', 'e', 'l'});
    test::write_bytes(tmp.file("vocab.txt"), {'a', '\n'});
    auto cfg = test::base_config();
    cfg.postproc.punct_model = tmp.file("");
    auto res = actors::engine_resources::create(cfg, test::default_model());
    REQUIRE_FALSE(res.has_value());
    CHECK(res.error().code == errc::invalid_config);
    CHECK(res.error().message.find("postproc.punct_model") != std::string::npos);
  }

  TEST_CASE("punct hook: the bundled models/punct loads as punct_model") {
    auto cfg = test::base_config();
    cfg.postproc.punct_model = SLUICE_SOURCE_DIR "/models/punct";
    auto res = actors::engine_resources::create(cfg, test::default_model());
    REQUIRE_MESSAGE(res.has_value(), res.error().message);
    REQUIRE((*res)->postproc != nullptr);
  }
}
