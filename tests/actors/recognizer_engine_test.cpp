// The recognizer core driven directly, with no actor, gives what the actor engine gives for the
// same audio: every segment of the bundled call, same text, same words with the same times.
// (Here rather than in tests/moe because the engine is actors/; the moe suite links moe only.)
#include "tests/actors/engine_test_util.hpp"

#include <cmath>

#include "moe/recognizer/recognizer.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {

constexpr int64_t samples_per_ms = dsp::model_sample_rate / 1000;
// The engine's expert shards sum a token's routed outputs in another order than the local
// experts do: logits move by ~1e-5 (batch_step_test), a word's peak posterior by about as much.
constexpr double confidence_tolerance = 1e-4;

}  // namespace

TEST_SUITE("recognizer vs engine") {
  TEST_CASE("the recognizer driven directly equals the engine's finals: text and word times") {
    auto cfg = test::base_config();
    auto res = test::resources(cfg);
    const auto segments = test::call_segments();
    REQUIRE(segments.size() >= 6);

    // The engine: one channel per call channel, every segment sent as one utterance.
    auto e = engine::start(res);
    caf::scoped_actor self{e->system()};
    std::map<int, open_reply> chans;
    for (const auto& s : segments)
      if (!chans.count(s.channel)) chans[s.channel] = test::open_ok(*e, self);
    for (const auto& s : segments) self->send(chans[s.channel].handle, segment_atom::value, s.samples, s.start_sample);
    for (auto& [c, r] : chans) self->send(r.handle, end_atom::value);
    auto run = test::collect(self, chans.size());
    REQUIRE_FALSE(run.timed_out);

    // The recognizer: every segment a stream, all of them stepped together.
    moe::recognizer rec(res->recognizer);
    std::vector<moe::recognizer_stream> streams;
    for (const auto& s : segments) {
      auto st = rec.create_stream();
      REQUIRE(st.has_value());
      const auto fb = res->fbank->compute(s.samples);
      REQUIRE(st->accept_features(fb.data(), static_cast<int64_t>(fb.size() / res->fbank->num_mels())).has_value());
      REQUIRE(st->input_finished().has_value());
      streams.push_back(std::move(*st));
    }
    std::vector<moe::recognizer_stream*> ptrs;
    for (auto& s : streams) ptrs.push_back(&s);
    while (std::any_of(streams.begin(), streams.end(), [](const auto& s) { return s.is_ready(); }))
      REQUIRE(rec.decode_streams(ptrs, cfg.engine.max_chunks_per_step).has_value());

    std::map<int, std::size_t> next;  // per call channel: its next final
    int words = 0;
    for (std::size_t i = 0; i < segments.size(); ++i) {
      CAPTURE(i);
      const auto& seg = segments[i];
      const auto& finals = run.finals[chans[seg.channel].channel];
      CHECK(run.errors[chans[seg.channel].channel].empty());
      REQUIRE(next[seg.channel] < finals.size());
      const auto& want = finals[next[seg.channel]++];
      REQUIRE(streams[i].is_final());
      const auto got = streams[i].get_result();
      CHECK(got.text == want.text);
      REQUIRE(got.words.size() == want.words.size());
      const int64_t offset_ms = seg.start_sample / samples_per_ms;  // engine times count from the call's start
      for (std::size_t w = 0; w < got.words.size(); ++w) {
        CAPTURE(w);
        CHECK(got.words[w].word == want.words[w].word);
        CHECK(got.words[w].start_ms + offset_ms == want.words[w].start_ms);
        CHECK(got.words[w].end_ms + offset_ms == want.words[w].end_ms);
        CHECK(std::abs(got.words[w].confidence - want.words[w].confidence) <= confidence_tolerance);
        ++words;
      }
    }
    CHECK(words >= 10);  // the call has real speech: there are times to compare
    for (auto& [c, r] : chans) CHECK(next[c] == run.finals[r.channel].size());
  }
}
