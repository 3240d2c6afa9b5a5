// A stream fed in any pieces gives the offline forward's logits (same window), and keeps
// bounded state.
#include <doctest/doctest.h>

#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "moe/acoustic_stream.hpp"
#include "moe/forward.hpp"
#include "moe/safetensors.hpp"
#include "tests/moe/model_test_util.hpp"

using namespace sluice;
using namespace sluice::moe;

namespace {

constexpr double stream_tolerance = 1e-4;

// Feeds `fbank` in pieces whose sizes `next_size` picks; returns the concatenated logits.
std::vector<float> run_stream(acoustic_stream& s, const std::vector<float>& fbank, int64_t mels,
                              const std::function<int64_t()>& next_size, int64_t* max_cache = nullptr) {
  std::vector<float> out;
  const int64_t frames = static_cast<int64_t>(fbank.size()) / mels;
  int64_t expect_first = 0;
  for (int64_t at = 0; at < frames;) {
    const int64_t n = std::min(frames - at, next_size());
    auto block = s.accept_fbank(fbank.data() + at * mels, n);
    REQUIRE_MESSAGE(block.has_value(), block.error().message);
    CHECK(block->first_frame == expect_first);
    CHECK(block->n_frames % s.window().chunk_frames == 0);
    expect_first += block->n_frames;
    out.insert(out.end(), block->logits.begin(), block->logits.end());
    if (max_cache) *max_cache = std::max(*max_cache, s.cached_frames());
    at += n;
  }
  auto last = s.finish();
  REQUIRE(last.has_value());
  CHECK(last->first_frame == expect_first);
  CHECK(last->n_frames < s.window().chunk_frames);
  out.insert(out.end(), last->logits.begin(), last->logits.end());
  return out;
}

std::vector<std::vector<float>> golden_fbanks(const std::string& dir) {
  std::vector<std::vector<float>> out;
  for (const char* name : {"synthetic0", "synthetic1", "synthetic2"}) {
    auto f = safetensors_file::load(dir + "/golden/" + name + ".safetensors");
    if (!f) continue;
    out.push_back(*f->read_f32("fbank"));
  }
  return out;
}

void check_streaming(const std::string& dir, std::optional<attention_window> window) {
  auto model = load_model(dir);
  REQUIRE_MESSAGE(model.has_value(), model.error().message);
  const int64_t mels = (*model)->arch().n_mels;
  stream_options so;
  so.window = window;
  auto stream = acoustic_stream::create(*model, so);
  REQUIRE_MESSAGE(stream.has_value(), stream.error().message);
  const attention_window w = stream->window();
  CAPTURE(w.chunk_frames);
  CAPTURE(w.left_chunks);
  forward_options fo;
  fo.window = w;

  double worst = 0;
  for (const auto& fb : golden_fbanks(dir)) {
    const int64_t frames = static_cast<int64_t>(fb.size()) / mels;
    auto offline = forward_offline(**model, fb.data(), frames, fo);
    REQUIRE(offline.has_value());
    std::mt19937 rng(frames);
    struct pattern {
      const char* name;
      std::function<int64_t()> size;
    };
    const pattern patterns[] = {
        {"all at once", [&] { return frames; }},
        {"one frame at a time", [] { return int64_t{1}; }},
        {"random 1..40", [&] { return int64_t(std::uniform_int_distribution<int>(1, 40)(rng)); }},
        {"random 0..9 (with empty calls)", [&] { return int64_t(std::uniform_int_distribution<int>(0, 9)(rng)); }},
        {"exactly one chunk of input", [&] { return int64_t{4} * w.chunk_frames; }},
    };
    for (const auto& p : patterns) {
      CAPTURE(std::string(p.name));
      stream->reset();
      int64_t max_cache = 0;
      // Empty calls would never advance the feeder, so they alternate with single frames.
      bool zero_last = false;
      auto size = [&] {
        int64_t n = p.size();
        if (n == 0 && zero_last) n = 1;
        zero_last = n == 0;
        return n;
      };
      const auto got = run_stream(*stream, fb, mels, size, &max_cache);
      REQUIRE(got.size() == offline->logits.size());
      const double err = test::max_abs_diff(offline->logits, got);
      worst = std::max(worst, err);
      CHECK(err <= stream_tolerance);
      if (w.left_chunks >= 0) CHECK(max_cache <= int64_t{w.left_chunks} * w.chunk_frames);
    }
  }
  MESSAGE(dir.substr(dir.rfind('/') + 1) << ", chunk " << w.chunk_frames << " left " << w.left_chunks
                                         << ": max abs diff stream vs offline over all cases and feeding patterns "
                                         << worst);
}

}  // namespace

TEST_SUITE("streaming") {
  TEST_CASE("tiny model: streams equal the offline forward for every feeding pattern and window") {
    const std::string dir = SLUICE_TEST_DATA_DIR "/tiny_model";
    check_streaming(dir, std::nullopt);  // model.json's streaming window (= the trained one)
    check_streaming(dir, attention_window{3, 1});
    check_streaming(dir, attention_window{5, 0});
    check_streaming(dir, attention_window{2, -1});
  }

  TEST_CASE("an extra model directory (SLUICE_MOE_GOLDEN_DIR) streams like its offline forward") {
    // The shipped default model, or another model directory with golden vectors.
    const char* env = std::getenv("SLUICE_MOE_GOLDEN_DIR");
    const std::string dir = env ? env : SLUICE_SOURCE_DIR "/models/default";
    check_streaming(dir, std::nullopt);
  }

  TEST_CASE("misuse is an error, not a crash, and leaves the stream usable") {
    auto model = load_model(SLUICE_TEST_DATA_DIR "/tiny_model");
    REQUIRE(model.has_value());
    CHECK(acoustic_stream::create(nullptr).error().code == errc::invalid_argument);
    stream_options full;
    full.window = attention_window{0, -1};
    CHECK(acoustic_stream::create(*model, full).error().message.find("cannot stream") != std::string::npos);
    auto s = acoustic_stream::create(*model);
    REQUIRE(s.has_value());
    const int64_t mels = (*model)->arch().n_mels;
    std::vector<float> fb(40 * mels, 7.0f);
    fb[5] = INFINITY;
    auto bad = s->accept_fbank(fb.data(), 40);
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().message.find("frame 0 of this call, bin 5") != std::string::npos);
    fb[5] = 7.0f;
    CHECK(s->accept_fbank(fb.data(), 40).has_value());
    CHECK(s->finish().has_value());
    CHECK(s->accept_fbank(fb.data(), 1).error().message.find("after finish") != std::string::npos);
    CHECK_FALSE(s->finish().has_value());
    s->reset();
    CHECK(s->frames_emitted() == 0);
    CHECK(s->accept_fbank(fb.data(), 40).has_value());
  }
}
