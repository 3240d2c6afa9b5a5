#pragma once
// Shared by the actor tests: the default model and its resources (loaded once), the bundled
// two-channel call cut into segments, the single-threaded reference transcription of a
// segment, and a subscriber that gathers a run's events.
#include <doctest/doctest.h>

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/actor_types.hpp"
#include "tests/common/word_errors.hpp"
#include "actors/engine.hpp"
#include "actors/engine_resources.hpp"
#include "actors/messages.hpp"
#include "config/sluice_config.hpp"
#include "dsp/file_speech.hpp"
#include "moe/decoder/ctc_decoder.hpp"
#include "moe/forward.hpp"

namespace sluice::test {

inline const char* default_model_dir() { return SLUICE_SOURCE_DIR "/models/default"; }
inline const char* sample_call() { return SLUICE_TEST_DATA_DIR "/sample_call_8k_mulaw_stereo.wav"; }

inline config::sluice_config base_config() {
  config::sluice_config cfg;
  cfg.model.dir = default_model_dir();
  cfg.engine.report_ms = 50;
  cfg.engine.scheduler_threads = 2;
  // Admission by queue wait is for overload; these tests are not about it, and under ASan on a
  // busy 2-core runner ready audio can wait seconds (the hot-swap test was refused at 1958 ms).
  cfg.engine.max_queue_wait_ms = 60000;
  cfg.engine.placement_probe_ms = 0;  // nominal placement: no start-up benchmark per test
  cfg.engine.placement_cache_hours = 0;  // a test that turns the probe on measures (and keeps nothing in ~/.cache)
  // The rules, whatever the working directory holds: display texts in these tests are written for
  // them (the model's own tests are in tests/moe/punct_* and punct_hook_test).
  cfg.postproc.punct_model = "";
  // Each final redacted alone: these tests compare the engine's words with the recognizer's
  // segment by segment, and in the sample call the customer says "... on my credit card", then
  // the number in the next segment, which the carried context masks (on by default; the
  // redaction tests turn it on themselves).
  cfg.postproc.redact_carry_finals = 0;
  return cfg;
}

inline std::shared_ptr<const moe::acoustic_model> default_model() {
  static auto model = [] {
    auto m = moe::load_model(default_model_dir());
    REQUIRE_MESSAGE(m.has_value(), "the default model loads");
    return *m;
  }();
  return model;
}

inline std::shared_ptr<const actors::engine_resources> resources(const config::sluice_config& cfg,
                                                                 std::shared_ptr<const moe::acoustic_model> model = {}) {
  auto r = actors::engine_resources::create(cfg, model ? model : default_model());
  REQUIRE(r.has_value());
  return *r;
}

struct segment_audio {
  int channel = 0;
  int64_t start_sample = 0;
  std::vector<float> samples;  // 16 kHz
};

// The bundled call, both channels, cut by the file front end into its VAD speech regions
// (one utterance each: more, shorter utterances than the slicer's 8-15 s segments).
inline const dsp::file_speech& call_speech() {
  static dsp::file_speech speech = [] {
    auto s = dsp::prepare_file(sample_call(), base_config());
    REQUIRE(s.has_value());
    return *s;
  }();
  return speech;
}

inline std::vector<segment_audio> call_segments() {
  std::vector<segment_audio> out;
  const auto& sp = call_speech();
  for (std::size_t ch = 0; ch < sp.channels.size(); ++ch)
    for (const auto& s : sp.channels[ch].regions)
      out.push_back({static_cast<int>(ch), s.start_sample,
                     std::vector<float>(sp.channels[ch].samples.begin() + s.start_sample,
                                        sp.channels[ch].samples.begin() + s.end_sample)});
  return out;
}

// What `sluice transcribe` computes for one segment on one thread, without any actor: fbank,
// offline forward, the engine's decoder (its mode, LM and vocabulary; no hotwords); the model's
// own expert choices (no capacity).
inline std::string reference_text(const actors::engine_resources& res, const std::vector<float>& samples16) {
  auto feats = res.fbank->compute(samples16);
  const auto n = static_cast<int64_t>(feats.size() / res.fbank->num_mels());
  auto fwd = moe::forward_offline(*res.model, feats.data(), n);
  REQUIRE(fwd.has_value());
  auto dec = moe::ctc_decoder::create(res.decoder_mode, res.model->tokens(), res.decoder, res.lm.get(),
                                      moe::lexicon_view(res.lexicon.get(), nullptr));
  REQUIRE(dec.has_value());
  if (fwd->n_frames > 0) REQUIRE(dec->accept(fwd->logits, static_cast<int32_t>(fwd->n_frames)).has_value());
  return dec->finalize().text;
}

// Character edits (Levenshtein) between two texts.
inline std::size_t edit_distance(const std::string& a, const std::string& b) { return sequence_edits(a, b); }

// What a subscriber received.
struct run_result {
  std::map<actors::channel_id, std::vector<actors::transcript_event>> finals, partials, errors;
  std::vector<actors::channel_id> drained;
  bool timed_out = false;
};

// Receives events on `self` until `channels` channels have drained (or the timeout).
inline run_result collect(caf::scoped_actor& self, std::size_t channels,
                          std::chrono::seconds timeout = std::chrono::seconds(120)) {
  run_result r;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (r.drained.size() < channels && !r.timed_out) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    self->receive(
        [&](actors::transcript_event& ev) {
          if (!ev.error.empty()) r.errors[ev.channel].push_back(ev);
          else if (ev.is_final) r.finals[ev.channel].push_back(ev);
          else r.partials[ev.channel].push_back(ev);
        },
        [&](actors::drained_atom, actors::channel_id id) { r.drained.push_back(id); },
        caf::after(left) >> [&] { r.timed_out = true; });
  }
  for (auto* m : {&r.finals, &r.partials})
    for (auto& [ch, evs] : *m)
      std::stable_sort(evs.begin(), evs.end(), [](const auto& a, const auto& b) { return a.utterance < b.utterance; });
  return r;
}

inline actors::open_reply open_ok(actors::engine& e, caf::scoped_actor& self, actors::channel_request req = {}) {
  auto r = e.open(req, caf::actor_cast<caf::actor>(self));
  REQUIRE_MESSAGE(r.ok, r.reason);
  return r;
}

// The supervisor's current expert, spillway and batcher handles.
struct engine_handles {
  std::vector<actors::expert_actor_type> experts;
  std::vector<actors::spillway_actor_type> spillways;
  caf::actor batcher;
};
inline engine_handles handles(actors::engine& e, caf::scoped_actor& self) {
  engine_handles h;
  self->request(e.supervisor(), std::chrono::seconds(10), actors::shards_atom::value)
      .receive([&](std::vector<actors::expert_actor_type>& ex, std::vector<actors::spillway_actor_type>& sp,
                   caf::actor& b) {
        h.experts = std::move(ex);
        h.spillways = std::move(sp);
        h.batcher = std::move(b);
      },
      [&](caf::error&) { FAIL("the supervisor did not answer"); });
  return h;
}

}  // namespace sluice::test
