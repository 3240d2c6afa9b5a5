// The synchronous recognizer core driven directly: a stream's final equals the offline forward
// decoded by the same decoder, however its features are cut and stepped; streams stepped together
// give what each gives alone; misuse and bad options are error values; abort and reset.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "moe/forward.hpp"
#include "moe/recognizer/recognizer.hpp"
#include "tests/moe/batch_test_util.hpp"

using namespace sluice;
using namespace sluice::moe;

namespace {

const char* default_dir() { return SLUICE_SOURCE_DIR "/models/default"; }

// Batched and streamed logits differ from the offline ones by at most 1e-5 (batch_step_test,
// streaming_test); a softmax probability moves by at most about that much, so a word's
// confidence (a peak posterior) may too.
constexpr double confidence_tolerance = 1e-4;

std::shared_ptr<const recognizer_resources> default_resources() {
  static auto res = [] {
    config::sluice_config cfg;
    cfg.model.dir = default_dir();
    auto r = recognizer_resources::create(cfg, test::load(default_dir()));
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    return *r;
  }();
  return res;
}

// The reference for one utterance: the whole fbank through forward_offline, then one decoder of
// the recognizer's kind over all its logits at once.
recognition_result offline_reference(const recognizer_resources& res, const std::vector<float>& fb) {
  const int64_t mels = res.model->arch().n_mels;
  auto fwd = forward_offline(*res.model, fb.data(), static_cast<int64_t>(fb.size()) / mels);
  REQUIRE(fwd.has_value());
  auto prepared = res.prepare({});
  REQUIRE(prepared.has_value());
  auto dec = res.make_decoder(*prepared);
  REQUIRE(dec.has_value());
  if (fwd->n_frames > 0) REQUIRE(dec->accept(fwd->logits, static_cast<int32_t>(fwd->n_frames)).has_value());
  auto d = dec->finalize();
  return {d.text, d.words, true, fwd->n_frames};
}

void check_same(const recognition_result& got, const recognition_result& want) {
  CHECK(got.is_final);
  CHECK(got.text == want.text);
  CHECK(got.frames == want.frames);
  REQUIRE(got.words.size() == want.words.size());
  for (std::size_t w = 0; w < got.words.size(); ++w) {
    CAPTURE(w);
    CHECK(got.words[w].word == want.words[w].word);
    CHECK(got.words[w].start_ms == want.words[w].start_ms);
    CHECK(got.words[w].end_ms == want.words[w].end_ms);
    CHECK(std::abs(got.words[w].confidence - want.words[w].confidence) <= confidence_tolerance);
  }
}

// Feeds `fb` in pieces of `piece` frames, one step (of at most `max_chunks` chunks) after each.
recognition_result run_alone(recognizer& rec, const std::vector<float>& fb, int64_t piece, int64_t max_chunks) {
  const int64_t mels = rec.resources().model->arch().n_mels, n = static_cast<int64_t>(fb.size()) / mels;
  auto s = rec.create_stream();
  REQUIRE(s.has_value());
  recognizer_stream* one[] = {&*s};
  for (int64_t t = 0; t < n; t += piece) {
    REQUIRE(s->accept_features(fb.data() + t * mels, std::min(piece, n - t)).has_value());
    REQUIRE(rec.decode_streams(one, max_chunks).has_value());
  }
  REQUIRE(s->input_finished().has_value());
  while (s->is_ready()) REQUIRE(rec.decode_streams(one, max_chunks).has_value());
  REQUIRE(s->is_final());
  return s->get_result();
}

}  // namespace

TEST_SUITE("recognizer") {
  TEST_CASE("a stream's final equals the offline forward decoded alike, however its input is cut and stepped") {
    auto res = default_resources();
    recognizer rec(res);
    const auto fbanks = test::five_fbanks(res->model->arch().n_mels, default_dir());
    int words = 0;
    for (std::size_t i = 0; i < fbanks.size(); ++i) {
      CAPTURE(i);
      const auto want = offline_reference(*res, fbanks[i]);
      words += static_cast<int>(want.words.size());
      for (const auto& [piece, chunks] : {std::pair<int64_t, int64_t>{37, 1}, {1000000, all_chunks}, {8, 2}}) {
        CAPTURE(piece);
        check_same(run_alone(rec, fbanks[i], piece, chunks), want);
      }
    }
    CHECK(words > 0);  // real words, with times to compare
  }

  TEST_CASE("streams stepped together give each stream's result alone, partials before finals") {
    auto res = default_resources();
    recognizer rec(res);
    const auto fbanks = test::five_fbanks(res->model->arch().n_mels, default_dir());
    const int64_t mels = res->model->arch().n_mels;
    std::vector<recognition_result> alone;
    for (const auto& fb : fbanks) alone.push_back(run_alone(rec, fb, 1000000, all_chunks));

    std::vector<recognizer_stream> streams;
    for (std::size_t i = 0; i < fbanks.size(); ++i) {
      auto s = rec.create_stream();
      REQUIRE(s.has_value());
      streams.push_back(std::move(*s));
    }
    std::vector<recognizer_stream*> ptrs;
    for (auto& s : streams) ptrs.push_back(&s);
    // Each stream gets its features in its own piece size, all stepped together one chunk at a
    // time, so the batches mix streams at different positions and lengths.
    std::vector<int64_t> fed(fbanks.size(), 0);
    bool saw_partial = false;
    for (bool more = true; more;) {
      more = false;
      for (std::size_t i = 0; i < fbanks.size(); ++i) {
        const int64_t n = static_cast<int64_t>(fbanks[i].size()) / mels, piece = 11 + 13 * static_cast<int64_t>(i);
        if (fed[i] < n) {
          const int64_t k = std::min(piece, n - fed[i]);
          REQUIRE(streams[i].accept_features(fbanks[i].data() + fed[i] * mels, k).has_value());
          fed[i] += k;
          if (fed[i] == n) REQUIRE(streams[i].input_finished().has_value());
        }
        more = more || fed[i] < n;
      }
      REQUIRE(rec.decode_streams(ptrs, 1).has_value());
      for (auto& s : streams)
        if (!s.is_final() && s.frames_decoded() > 0) {
          const auto p = s.get_result();
          CHECK_FALSE(p.is_final);
          CHECK(p.frames == s.frames_decoded());
          saw_partial = true;
        }
    }
    while (std::any_of(streams.begin(), streams.end(), [](const auto& s) { return s.is_ready(); }))
      REQUIRE(rec.decode_streams(ptrs, 1).has_value());
    CHECK(saw_partial);
    for (std::size_t i = 0; i < streams.size(); ++i) {
      CAPTURE(i);
      REQUIRE(streams[i].is_final());
      check_same(streams[i].get_result(), alone[i]);
    }
  }

  TEST_CASE("bad options and misuse are error values, and the stream stays usable") {
    auto res = default_resources();
    recognizer rec(res);
    // Options: a hotword the vocabulary cannot spell, a weight out of range, bad decoder settings.
    auto bad_hw = rec.create_stream({{{"\xe2\x82\xac\xe2\x82\xac", 2.0f}}, std::nullopt});
    REQUIRE_FALSE(bad_hw.has_value());
    CHECK(bad_hw.error().code == errc::invalid_argument);
    CHECK(rec.create_stream({{{"hello", 1000.0f}}, std::nullopt}).error().code == errc::invalid_argument);
    decoder_options bad_dec = res->decoder;
    bad_dec.beam_size = 0;
    bad_dec.lexicon_beam_size = 0;
    auto bad = rec.create_stream({{}, bad_dec});
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().code == errc::invalid_config);
    CHECK(parse_hotwords({"acme corp 101"}, 1.0f).error().code == errc::invalid_argument);
    CHECK(parse_hotwords({"acme corp 4.5", "  ", "hello"}, 1.0f)->size() == 2);

    const auto fb = test::five_fbanks(res->model->arch().n_mels, default_dir()).front();
    auto s = rec.create_stream({{{"hello", 2.0f}}, std::nullopt});
    REQUIRE(s.has_value());
    std::vector<float> nan_frame(static_cast<std::size_t>(res->model->arch().n_mels), NAN);
    CHECK(s->accept_features(nan_frame.data(), 1).error().code == errc::invalid_argument);
    CHECK(s->accept_features(nullptr, 3).error().code == errc::invalid_argument);
    recognizer_stream* twice[] = {&*s, &*s};
    CHECK(rec.decode_streams(twice).error().code == errc::invalid_argument);
    recognizer_stream* none[] = {nullptr};
    CHECK(rec.decode_streams(none).error().code == errc::invalid_argument);
    CHECK(s->status() == stream_status::open);  // none of that changed the stream

    // Too short for one output frame: final at once, with nothing recognised.
    REQUIRE(s->accept_features(fb.data(), 3).has_value());
    REQUIRE(s->input_finished().has_value());
    CHECK(s->is_final());
    CHECK(s->get_result().text.empty());
    CHECK_FALSE(s->accept_features(fb.data(), 1).has_value());
    CHECK_FALSE(s->input_finished().has_value());

    // reset(): the next utterance on the same stream equals a fresh stream's (with the same
    // hotwords); abort() gives one up without a result and without taking part in steps.
    REQUIRE(s->reset().has_value());
    const int64_t n = static_cast<int64_t>(fb.size()) / res->model->arch().n_mels;
    REQUIRE(s->accept_features(fb.data(), n).has_value());
    REQUIRE(s->input_finished().has_value());
    recognizer_stream* one[] = {&*s};
    while (s->is_ready()) REQUIRE(rec.decode_streams(one).has_value());
    auto fresh = rec.create_stream({{{"hello", 2.0f}}, std::nullopt});
    REQUIRE(fresh.has_value());
    REQUIRE(fresh->accept_features(fb.data(), n).has_value());
    REQUIRE(fresh->input_finished().has_value());
    recognizer_stream* f1[] = {&*fresh};
    while (fresh->is_ready()) REQUIRE(rec.decode_streams(f1).has_value());
    CHECK(s->get_result().text == fresh->get_result().text);
    CHECK(s->get_result().words == fresh->get_result().words);

    REQUIRE(s->reset().has_value());
    REQUIRE(s->accept_features(fb.data(), n).has_value());
    s->abort();
    CHECK(s->status() == stream_status::aborted);
    CHECK_FALSE(s->is_ready());
    REQUIRE(rec.decode_streams(one).has_value());
    CHECK(s->frames_decoded() == 0);
    CHECK(s->get_result().text.empty());
  }

  TEST_CASE("a stream of another model is refused by the step") {
    auto res = default_resources();
    recognizer rec(res);
    config::sluice_config cfg;
    cfg.model.dir = SLUICE_TEST_DATA_DIR "/tiny_model";
    auto tiny = recognizer_resources::create(cfg, test::tiny_model());
    REQUIRE(tiny.has_value());
    recognizer other(*tiny);
    auto s = other.create_stream();
    REQUIRE(s.has_value());
    recognizer_stream* one[] = {&*s};
    CHECK(rec.decode_streams(one).error().code == errc::invalid_argument);
  }
}
