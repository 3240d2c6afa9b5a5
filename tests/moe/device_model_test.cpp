// The forward written against kernels::backend (moe/device/device_model.hpp), run on the CPU
// backend: a batch of utterances of different lengths gives each utterance PyTorch's golden
// logits, block outputs and expert choices (tools/train/model.py's own numbers), as the
// single-utterance forward_offline does.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "moe/acoustic_model.hpp"
#include "moe/decoder/ctc_frames.hpp"
#include "moe/device/cpu_backend.hpp"
#include "moe/device/device_model.hpp"
#include "moe/forward.hpp"
#include "moe/safetensors.hpp"
#include "tests/moe/golden_cases.hpp"
#include "tests/moe/model_test_util.hpp"

using namespace sluice;
using namespace sluice::moe;

namespace {

constexpr double golden_tolerance = 1e-3;  // as the forward_offline golden test

using golden = test::golden_case;

std::vector<golden> load_golden(const std::string& dir) { return test::golden_cases(dir); }

int mismatched_rows(const std::vector<int32_t>& a, const std::vector<int32_t>& b, int width) {
  if (a.size() != b.size()) return -1;
  int bad = 0;
  for (std::size_t t = 0; t * width < a.size(); ++t)
    bad += !std::equal(a.begin() + t * width, a.begin() + (t + 1) * width, b.begin() + t * width);
  return bad;
}

}  // namespace

TEST_SUITE("device model") {
  TEST_CASE("on the CPU backend a batch of utterances matches PyTorch's golden vectors for each") {
    const std::string dir = SLUICE_SOURCE_DIR "/models/default";
    auto model = load_model(dir);
    REQUIRE_MESSAGE(model.has_value(), model.error().message);
    const auto& arch = (*model)->arch();
    auto dev = make_cpu_backend();
    auto dm = device_model::create(*model, *dev);
    REQUIRE_MESSAGE(dm.has_value(), dm.error().message);
    CHECK((*dm)->weight_bytes() > 4'000'000);  // the 5.1 M parameters, f32
    auto cases = load_golden(dir);
    REQUIRE(cases.size() >= 2);
    // Golden utterances, with a short one (5 frames: no output) between them and the first
    // one's first 100 frames at the end: rows of every utterance follow each other.
    std::vector<fbank_view> batch;
    for (const auto& g : cases) {
      batch.push_back({g.fbank.data(), g.frames});
      batch.push_back({g.fbank.data(), 5});
    }
    batch.push_back({cases[0].fbank.data(), 100});
    // And a long one (the golden frames three times over: 370 model frames), so that the
    // window's left edge (4 chunks of 16 frames) cuts keys off.
    std::vector<float> long_fbank;
    for (int rep = 0; rep < 3; ++rep)
      for (const auto& g : cases) long_fbank.insert(long_fbank.end(), g.fbank.begin(), g.fbank.end());
    const int64_t long_frames = static_cast<int64_t>(long_fbank.size()) / arch.n_mels;
    batch.push_back({long_fbank.data(), long_frames});
    device_forward_options opt;
    opt.trace = true;
    auto out = (*dm)->forward(batch, opt);
    REQUIRE_MESSAGE(out.has_value(), out.error().message);
    REQUIRE(out->size() == batch.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
      CAPTURE(i);
      const auto& g = cases[i];
      const auto& r = (*out)[2 * i];
      REQUIRE(r.n_frames == g.file.find("logits")->shape[0]);
      CHECK(test::max_abs_diff(*g.file.read_f32("logits"), r.logits) <= golden_tolerance);
      for (int l = 0; l < arch.n_layers; ++l) {
        CAPTURE(l);
        const std::string p = "layer" + std::to_string(l);
        CHECK(test::max_abs_diff(*g.file.read_f32(p + ".out"), r.layers[l].out) <= golden_tolerance);
        CHECK(mismatched_rows(*g.file.read_i32(p + ".experts"), r.layers[l].experts, arch.top_k) == 0);
        CHECK(mismatched_rows(*g.file.read_i32(p + ".groups"), r.layers[l].groups, arch.top_groups) == 0);
      }
      CHECK((*out)[2 * i + 1].n_frames == 0);
      CHECK((*out)[2 * i + 1].logits.empty());
    }
    // The same batch with the host front ends on three threads: the same numbers.
    (*dm)->set_host_threads(3);
    auto threaded = (*dm)->forward(batch);
    REQUIRE(threaded.has_value());
    for (std::size_t i = 0; i < batch.size(); ++i) CHECK((*threaded)[i].logits == (*out)[i].logits);
    // The long utterance: forward_offline's logits (checked against PyTorch by the golden
    // test, and against streaming by the streaming tests).
    auto whole = forward_offline(**model, long_fbank.data(), long_frames);
    REQUIRE(whole.has_value());
    REQUIRE(whole->n_frames > 5 * arch.chunk_frames);
    CHECK(test::max_abs_diff(whole->logits, out->back().logits) <= 1e-4);
    // The 100-frame prefix is its own utterance: its logits are forward_offline's of those
    // frames, not the first rows of the whole utterance (its attention and context see no more).
    auto prefix = forward_offline(**model, cases[0].fbank.data(), 100);
    REQUIRE(prefix.has_value());
    const auto& last = (*out)[out->size() - 2];
    REQUIRE(last.n_frames == prefix->n_frames);
    CHECK(test::max_abs_diff(prefix->logits, last.logits) <= 1e-4);
    std::vector<float> head((*out)[0].logits.begin(), (*out)[0].logits.begin() + last.logits.size());
    CHECK(test::max_abs_diff(head, last.logits) > 1e-3);
  }

  TEST_CASE("live streams stepped on the CPU backend, fed in uneven pieces, on 1 or 3 front-end threads, give the offline logits") {
    const std::string dir = SLUICE_SOURCE_DIR "/models/default";
    auto model = load_model(dir);
    REQUIRE(model.has_value());
    const auto& arch = (*model)->arch();
    const int64_t mels = arch.n_mels, vocab = arch.vocab_size;
    auto cases = load_golden(dir);
    std::vector<float> long_fbank;
    for (int rep = 0; rep < 3; ++rep)
      for (const auto& g : cases) long_fbank.insert(long_fbank.end(), g.fbank.begin(), g.fbank.end());
    const std::vector<fbank_view> utts{{long_fbank.data(), int64_t(long_fbank.size()) / mels},
                                       {cases[0].fbank.data(), cases[0].frames},
                                       {cases[1].fbank.data(), cases[1].frames}};
    auto dev = make_cpu_backend();
    auto dm = device_model::create(*model, *dev);
    REQUIRE(dm.has_value());
    // Twice through the same streams: the second utterance after reset() starts clean.
    std::vector<std::unique_ptr<device_stream>> streams;
    for (std::size_t i = 0; i < utts.size(); ++i) {
      auto st = (*dm)->open_stream();
      REQUIRE_MESSAGE(st.has_value(), st.error().message);
      streams.push_back(std::move(*st));
    }
    for (int round = 0; round < 2; ++round) {
      CAPTURE(round);
      (*dm)->set_host_threads(round == 0 ? 1 : 3);  // round 1: the front ends on three threads
      std::vector<std::vector<float>> got(utts.size());
      std::vector<int64_t> fed(utts.size(), 0);
      std::vector<device_stream*> all;
      for (auto& st : streams) all.push_back(st.get());
      int64_t max_cached = 0;
      for (int step = 0; !std::all_of(all.begin(), all.end(), [](auto* s) { return s->host().done(); }); ++step) {
        REQUIRE(step < 1000);
        for (std::size_t i = 0; i < utts.size(); ++i) {
          // Pieces of 23 + 17 i frames (round 0) or 101 (round 1); finish() once all is in.
          const int64_t piece = round == 0 ? 23 + 17 * int64_t(i) : 101;
          const int64_t take = std::min(piece, utts[i].n_frames - fed[i]);
          if (take > 0) REQUIRE(streams[i]->host().accept_fbank(utts[i].data + fed[i] * mels, take).has_value());
          fed[i] += take;
          if (fed[i] == utts[i].n_frames && !streams[i]->host().finished()) REQUIRE(streams[i]->host().finish().has_value());
        }
        auto out = (*dm)->step(all, round == 0 ? 1 : all_chunks);
        REQUIRE_MESSAGE(out.has_value(), out.error().message);
        for (std::size_t i = 0; i < utts.size(); ++i) {
          const auto& c = (*out)[i];
          CHECK(c.p0 == int64_t(got[i].size()) / vocab);
          CHECK(int64_t(c.logits.size()) == c.n_frames * vocab);
          got[i].insert(got[i].end(), c.logits.begin(), c.logits.end());
          max_cached = std::max(max_cached, streams[i]->cached_frames());
        }
      }
      CHECK(max_cached == int64_t{arch.left_chunks} * arch.chunk_frames);
      CHECK((*dm)->cache_allocations() == 3);
      for (std::size_t i = 0; i < utts.size(); ++i) {
        CAPTURE(i);
        auto offline = forward_offline(**model, utts[i].data, utts[i].n_frames);
        REQUIRE(offline.has_value());
        CHECK(test::max_abs_diff(offline->logits, got[i]) <= 1e-4);
        streams[i]->reset();
        CHECK(streams[i]->cached_frames() == 0);
      }
    }
    // Streams that end give their device memory to the next ones: no new allocation, and a
    // recycled stream starts clean (its logits are the offline ones, as above).
    streams.clear();
    auto again = (*dm)->open_stream();
    REQUIRE(again.has_value());
    CHECK((*dm)->cache_allocations() == 3);
    REQUIRE((*again)->host().accept_fbank(cases[1].fbank.data(), cases[1].frames).has_value());
    REQUIRE((*again)->host().finish().has_value());
    device_stream* one[] = {again->get()};
    std::vector<float> logits;
    while (!(*again)->host().done()) {  // a chunk a step: the recycled caches are read
      auto out = (*dm)->step(one, 1);
      REQUIRE(out.has_value());
      logits.insert(logits.end(), (*out)[0].logits.begin(), (*out)[0].logits.end());
    }
    auto offline = forward_offline(**model, cases[1].fbank.data(), cases[1].frames);
    REQUIRE(offline.has_value());
    CHECK(test::max_abs_diff(offline->logits, logits) <= 1e-4);
  }

  TEST_CASE("log-probabilities on the device equal log_softmax of the logits") {
    auto model = load_model(SLUICE_TEST_DATA_DIR "/tiny_model");
    REQUIRE(model.has_value());
    const int64_t mels = (*model)->arch().n_mels;
    std::vector<float> fb(60 * mels);
    for (std::size_t i = 0; i < fb.size(); ++i) fb[i] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
    auto dev = make_cpu_backend();
    auto dm = device_model::create(*model, *dev);
    REQUIRE(dm.has_value());
    const fbank_view one[] = {{fb.data(), 60}};
    auto logits = (*dm)->forward(one);
    device_forward_options lp;
    lp.log_probs = true;
    auto logp = (*dm)->forward(one, lp);
    REQUIRE(logits.has_value());
    REQUIRE(logp.has_value());
    const auto& l = (*logits)[0];
    REQUIRE(l.n_frames == 14);
    std::vector<float> expect(l.logits.size());
    for (int64_t t = 0; t < l.n_frames; ++t)
      log_softmax(std::span<const float>(l.logits.data() + t * l.vocab, l.vocab),
                  std::span<float>(expect.data() + t * l.vocab, l.vocab));
    CHECK(test::max_abs_diff(expect, (*logp)[0].logits) <= 1e-6);
  }

  TEST_CASE("a model without shared experts: the device forward equals forward_offline") {
    auto tiny = load_model(SLUICE_TEST_DATA_DIR "/tiny_model");
    REQUIRE(tiny.has_value());
    // The tiny model with its shared experts taken out (n_shared = 0 is a valid architecture).
    model_manifest manifest = (*tiny)->manifest();
    manifest.arch.n_shared = 0;
    model_weights weights = (*tiny)->weights();
    for (auto& b : weights.blocks) b.moe.shared.clear();
    auto model = std::make_shared<const acoustic_model>(manifest, (*tiny)->tokens(), weights);
    const int64_t mels = manifest.arch.n_mels;
    std::vector<float> fb(90 * mels);
    for (std::size_t i = 0; i < fb.size(); ++i) fb[i] = std::cos(0.11f * static_cast<float>(i)) * 4.0f + 2.0f;
    auto dev = make_cpu_backend();
    auto dm = device_model::create(model, *dev);
    REQUIRE(dm.has_value());
    const fbank_view one[] = {{fb.data(), 90}};
    auto got = (*dm)->forward(one);
    auto want = forward_offline(*model, fb.data(), 90);
    REQUIRE(got.has_value());
    REQUIRE(want.has_value());
    REQUIRE(want->n_frames > 0);
    CHECK(test::max_abs_diff(want->logits, (*got)[0].logits) <= 1e-5);
  }

  TEST_CASE("bad input names the utterance, frame and bin") {
    auto model = load_model(SLUICE_TEST_DATA_DIR "/tiny_model");
    REQUIRE(model.has_value());
    const int64_t mels = (*model)->arch().n_mels;
    std::vector<float> good(20 * mels, 1.0f), bad(20 * mels, 1.0f);
    bad[4 * mels + 7] = std::nanf("");
    auto dev = make_cpu_backend();
    auto dm = device_model::create(*model, *dev);
    REQUIRE(dm.has_value());
    const fbank_view batch[] = {{good.data(), 20}, {bad.data(), 20}};
    auto out = (*dm)->forward(batch);
    REQUIRE_FALSE(out.has_value());
    CHECK(out.error().code == errc::invalid_argument);
    CHECK(out.error().message.find("utterance 1 frame 4 bin 7 is not finite") != std::string::npos);
    // On three host threads the check runs inside the threaded front end: utterances 1 and 3 are
    // bad (on threads 1 and 0), and the first in order is the one named, with its first bad value.
    std::vector<float> bad2(20 * mels, 1.0f);
    bad2[2 * mels] = std::numeric_limits<float>::infinity();
    bad[9 * mels] = -std::numeric_limits<float>::infinity();
    (*dm)->set_host_threads(3);
    const fbank_view four[] = {{good.data(), 20}, {bad.data(), 20}, {good.data(), 20}, {bad2.data(), 20}};
    auto out4 = (*dm)->forward(four);
    REQUIRE_FALSE(out4.has_value());
    CHECK(out4.error().code == errc::invalid_argument);
    CHECK(out4.error().message.find("utterance 1 frame 4 bin 7 is not finite") != std::string::npos);
    const fbank_view only_last[] = {{good.data(), 20}, {good.data(), 20}, {bad2.data(), 20}};
    CHECK((*dm)->forward(only_last).error().message.find("utterance 2 frame 2 bin 0 is not finite") !=
          std::string::npos);
    (*dm)->set_host_threads(1);
    const fbank_view null_frames[] = {{nullptr, 3}};
    CHECK((*dm)->forward(null_frames).error().code == errc::invalid_argument);
    auto empty = (*dm)->forward({});
    REQUIRE(empty.has_value());
    CHECK(empty->empty());
  }
}
