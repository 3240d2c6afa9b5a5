// The batcher's message protocol, message by message, with CAF's own test DSL (caf/test/dsl.hpp:
// expect / disallow on the deterministic test coordinator; issue 11). This file is a CAF unit-test
// binary of its own (CAF's runner, not doctest): the DSL's clauses report through CAF's test
// engine. Each `expect` names the next message an actor must take (its types and its sender) and
// runs it; each `disallow` fails if that message is the next one waiting.
//
//   1. A channel's features wait for the batching window (nothing is runnable until the timer);
//      the step then goes layer by layer: one block per shard with pairs, every reply back before
//      the next layer's blocks; the logits go to the channel that sent the features and to no
//      other, once, and equal the offline forward.
//   2. A channel dropped while its utterance is in a step gets no logits from that step; the
//      other channel of the step gets its own.
//   3. A step given up while an expert still holds a block (the request timed out): the lost
//      utterance is reported once; the expert's late reply is taken and ignored (no logits, no
//      block follows it); the next utterance's blocks are new buffers, not the held ones.
//   4. A lane killed while it holds a channel's utterance (utterances are placed per utterance;
//      a's went to lane 0, b's to lane 1): the supervisor gets the lane's down message, restarts
//      it and tells every channel which actor died; a reports its utterance lost to its
//      subscriber, b (nothing on the dead actor) reports nothing, and both go on to finish
//      (offline_gather: their segments wait in the window, so lane 0 holds a's when killed).
//   5. Lane decoding: a lane handed an utterance's decoder with its features answers with
//      decoded results and no logits; its final equals decoding the offline forward's logits.
//   6. Chunks of an utterance already reported lost are ignored (no stream is made for them);
//      the channel's next utterance runs as usual.
//   7. [engine] live_priority: when a step's budget holds one stream, a live stream goes before
//      an offline one that was ready earlier; with it off, the older one goes first.
//   8. Offline features on a lane with no live stream are stepped at once (no window, no timer);
//      on a lane where a live stream is, they wait for the window as live ones do (7), and with
//      [engine] offline_gather always (4).
#define CAF_SUITE actors_protocol
#include <caf/test/unit_test_impl.hpp>

#include <caf/test/dsl.hpp>

#include <cmath>
#include <memory>
#include <vector>

#include "actors/actor_types.hpp"
#include "actors/batcher_actor.hpp"
#include "actors/engine_resources.hpp"
#include "actors/expert_actor.hpp"
#include "actors/messages.hpp"
#include "actors/supervisor_actor.hpp"
#include "actors/system_config.hpp"
#include "config/sluice_config.hpp"
#include "dsp/file_speech.hpp"
#include "moe/decoder/ctc_decoder.hpp"
#include "moe/forward.hpp"
#include "tests/actors/opening_subscriber.hpp"
#include "tests/moe/model_test_util.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {

using release_atom = caf::atom_constant<caf::atom("release")>;

config::sluice_config protocol_config() {
  config::sluice_config cfg;
  cfg.model.dir = SLUICE_SOURCE_DIR "/models/default";
  cfg.engine.placement_probe_ms = 0;
  cfg.engine.expert_shards = 2;
  cfg.engine.overlap = false;             // one micro-batch per step: one block per shard per layer
  cfg.engine.report_ms = 600000;          // no report timer comes due in these tests
  // The window: the batcher also checks it against the wall clock (a stream that waited a whole
  // window starts a step at once); 60 s keeps that from ever happening however slow the run
  // (TSan, a busy machine), so only the test clock's timer starts a step.
  cfg.engine.batch_window_ms = 60000;
  cfg.engine.max_chunks_per_step = 256;   // a whole utterance in one step
  cfg.engine.max_queue_wait_ms = 60000;
  cfg.postproc.punct_model = "";  // the rules, in the channel, whatever the working directory holds
  return cfg;
}

// A channel: keeps the logits it is sent.
caf::behavior recorder(caf::event_based_actor*, std::shared_ptr<std::vector<logits_chunk>> out) {
  return {
      [out](logits_atom, logits_chunk& c) { out->push_back(std::move(c)); },
  };
}

struct held_block {
  caf::typed_response_promise<reply_msg> rp;
  block_msg m;
};

// An expert that holds every block it is asked for (the request stays unanswered) until
// `release`, then hands them to the real expert actor `real`, which answers the batcher. Typed:
// a block sink (what the batcher takes as a shard) that also takes `release`.
using holding_expert_type = block_sink_actor::extend<caf::reacts_to<release_atom>>;

holding_expert_type::behavior_type holding_expert(holding_expert_type::pointer self, expert_actor_type real,
                                                  std::shared_ptr<std::vector<held_block>> held,
                                                  std::shared_ptr<std::vector<block_msg>> seen) {
  return {
      [=](block_atom, block_msg& m) {
        seen->push_back(m);
        auto rp = self->make_response_promise<reply_msg>();
        held->push_back({rp, m});
        return rp;
      },
      [=](release_atom) {
        for (auto& h : *held) h.rp.delegate(real, block_atom::value, h.m);
        held->clear();
      },
  };
}

template <class Handle>
bool has_mail(const Handle& a) {
  return caf::actor_cast<caf::abstract_actor*>(a)->peek_at_next_mailbox_element() != nullptr;
}

struct fixture : test_coordinator_fixture<engine_system_config> {
  config::sluice_config conf = protocol_config();  // (the base fixture's `cfg` is CAF's)
  std::shared_ptr<const engine_resources> res;
  dsp::file_speech speech;                // the bundled call, both channels, cut into speech regions
  std::vector<std::vector<float>> feats;  // fbank of each channel's first speech region
  int64_t n_mels = 0;

  fixture() {
    auto model = moe::load_model(conf.model.dir);
    CAF_REQUIRE(model.has_value());
    auto r = engine_resources::create(conf, *model);
    CAF_REQUIRE(r.has_value());
    res = *r;
    auto prepared = dsp::prepare_file(SLUICE_TEST_DATA_DIR "/sample_call_8k_mulaw_stereo.wav", conf);
    CAF_REQUIRE(prepared.has_value());
    speech = std::move(*prepared);
    CAF_REQUIRE_EQUAL(speech.channels.size(), 2u);
    for (std::size_t ch = 0; ch < 2; ++ch) {
      CAF_REQUIRE(!speech.channels[ch].regions.empty());
      feats.push_back(res->fbank->compute(region(ch, 0)));
    }
    n_mels = static_cast<int64_t>(res->fbank->num_mels());
  }

  // The 16 kHz samples of channel ch's speech region i.
  std::vector<float> region(std::size_t ch, std::size_t i) const {
    const auto& c = speech.channels[ch];
    const auto& s = c.regions.at(i);
    return std::vector<float>(c.samples.begin() + s.start_sample, c.samples.begin() + s.end_sample);
  }

  std::vector<expert_actor_type> spawn_experts() {
    std::vector<expert_actor_type> out;
    for (int32_t s = 0; s < res->placement.n_shards(); ++s) out.push_back(sys.spawn(expert_actor, res, s, metrics_actor_type{}));
    return out;
  }

  compute_actor_type spawn_batcher(const std::vector<block_sink_actor>& experts) {
    auto b = sys.spawn(batcher_actor, res, metrics_actor_type{}, supervisor_actor_type{});
    sched.run();  // its first report (to nobody: no metrics actor)
    caf::anon_send(b, shards_atom::value, experts, std::vector<spillway_actor_type>{});
    expect((shards_atom, std::vector<block_sink_actor>, std::vector<spillway_actor_type>), from(_).to(b));
    return b;
  }

  // Two shards' experts, a batcher with them, and two channels (recorders) a and b, started.
  struct two_channels {
    std::vector<block_sink_actor> experts;
    compute_actor_type batcher;
    caf::actor chan_a, chan_b;
    std::shared_ptr<std::vector<logits_chunk>> got_a = std::make_shared<std::vector<logits_chunk>>();
    std::shared_ptr<std::vector<logits_chunk>> got_b = std::make_shared<std::vector<logits_chunk>>();
  };
  two_channels start_two_channels() {
    two_channels t;
    for (const auto& e : spawn_experts()) t.experts.emplace_back(e);
    CAF_REQUIRE_EQUAL(t.experts.size(), 2u);
    t.batcher = spawn_batcher(t.experts);
    t.chan_a = sys.spawn(recorder, t.got_a);
    t.chan_b = sys.spawn(recorder, t.got_b);
    sched.run();  // the new actors' start
    return t;
  }
  void stop(const two_channels& t) {
    for (const auto& a : t.experts) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    for (const auto& a : {caf::actor_cast<caf::actor>(t.batcher), t.chan_a, t.chan_b}) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    sched.run();
  }

  // Logits of the offline forward of feats[i], the reference of every engine path.
  std::vector<float> offline_logits(std::size_t i) {
    auto fwd = moe::forward_offline(*res->model, feats[i].data(), static_cast<int64_t>(feats[i].size()) / n_mels);
    CAF_REQUIRE(fwd.has_value());
    return fwd->logits;
  }

  // A lane of `conf` (no supervisor, no metrics) and two recording channels, all started.
  struct lane_and_recorders {
    compute_actor_type lane;
    caf::actor chan_a, chan_b;
    std::shared_ptr<std::vector<logits_chunk>> got_a, got_b;
  };
  lane_and_recorders lane_with_two_recorders() {
    auto r = engine_resources::create(conf, res->model);
    CAF_REQUIRE(r.has_value());
    lane_and_recorders t{sys.spawn(lane_actor, *r, metrics_actor_type{}, supervisor_actor_type{}, 0, -1), {}, {},
                         std::make_shared<std::vector<logits_chunk>>(), std::make_shared<std::vector<logits_chunk>>()};
    t.chan_a = sys.spawn(recorder, t.got_a);
    t.chan_b = sys.spawn(recorder, t.got_b);
    sched.run();
    return t;
  }

  // One step's exchange with real experts, every layer: the blocks waiting at the experts (from
  // the batcher, all of this layer), then each reply at the batcher; no expert is sent anything
  // until the layer's last reply is in, and while another layer's blocks are out no logits go to
  // the `quiet` channels. Returns the layers seen.
  int run_step_layers(const compute_actor_type& batcher, const std::vector<block_sink_actor>& experts,
                      const std::vector<caf::actor>& quiet) {
    int layers = 0;
    for (;;) {
      std::vector<block_sink_actor> asked;
      for (const auto& e : experts)
        if (has_mail(e)) {
          auto block = std::get<1>(extract<block_atom, block_msg>(e));
          CAF_CHECK_EQUAL(block.block->layer, layers);
          expect((block_atom, block_msg), from(batcher).to(e));
          asked.push_back(e);
        }
      if (asked.empty()) break;
      if (layers > 0)  // the previous layer's replies sent no logits, only these blocks
        for (const auto& q : quiet) disallow((logits_atom, logits_chunk), from(batcher).to(q));
      ++layers;
      for (std::size_t i = 0; i < asked.size(); ++i) {
        expect((reply_msg), from(asked[i]).to(batcher));
        if (i + 1 < asked.size())
          for (const auto& e : experts) CAF_CHECK(!has_mail(e));  // the layer waits for every reply
      }
    }
    return layers;
  }
};

using test::max_abs_diff;

}  // namespace

CAF_TEST_FIXTURE_SCOPE(batcher_protocol, fixture)

CAF_TEST(features wait for the window then step layer by layer and answer only their channel) {
  auto t = start_two_channels();
  const auto& [experts, batcher, chan_a, chan_b, got_a, got_b] = t;

  const auto timers_before = sched.clock().schedule().size();
  caf::send_as(chan_a, batcher, features_atom::value, feature_chunk{1, 0, feats[0], true});
  expect((features_atom, feature_chunk), from(chan_a).to(batcher));
  // Gathering: no step, no message anywhere; one timer more than before: the window's.
  CAF_CHECK(!sched.has_job());
  CAF_CHECK_EQUAL(sched.clock().schedule().size(), timers_before + 1);
  caf::send_as(chan_b, batcher, features_atom::value, feature_chunk{2, 0, feats[1], true});
  expect((features_atom, feature_chunk), from(chan_b).to(batcher));
  CAF_CHECK(!sched.has_job());
  for (const auto& e : experts) disallow((block_atom, block_msg), from(batcher).to(e));

  CAF_REQUIRE(sched.trigger_timeout());
  expect((flush_atom), from(batcher).to(batcher));
  const int layers = run_step_layers(batcher, experts, {chan_a, chan_b});
  CAF_CHECK_EQUAL(layers, res->model->arch().n_layers);

  // Each channel gets its own utterance's logits, once; then nothing is left to run.
  expect((logits_atom, logits_chunk), from(batcher).to(chan_a));
  expect((logits_atom, logits_chunk), from(batcher).to(chan_b));
  CAF_CHECK(!sched.has_job());
  CAF_REQUIRE_EQUAL(got_a->size(), 1u);
  CAF_REQUIRE_EQUAL(got_b->size(), 1u);
  const std::vector<float> ref[2] = {offline_logits(0), offline_logits(1)};
  const logits_chunk* got[2] = {&got_a->front(), &got_b->front()};
  for (int i = 0; i < 2; ++i) {
    CAF_CHECK_EQUAL(got[i]->channel, static_cast<channel_id>(i + 1));
    CAF_CHECK_EQUAL(got[i]->utterance, 0);
    CAF_CHECK_EQUAL(got[i]->first_frame, 0);
    CAF_CHECK(got[i]->last);
    CAF_CHECK(got[i]->error.empty());
    CAF_CHECK_EQUAL(got[i]->logits.size(), ref[i].size());
    CAF_CHECK_LESS(max_abs_diff(got[i]->logits, ref[i]), 1e-3);
  }

  stop(t);
}

CAF_TEST(a channel dropped during its step gets no logits and the other channel of the step gets its own) {
  auto t = start_two_channels();
  const auto& [experts, batcher, chan_a, chan_b, got_a, got_b] = t;
  caf::send_as(chan_a, batcher, features_atom::value, feature_chunk{1, 0, feats[0], true});
  expect((features_atom, feature_chunk), from(chan_a).to(batcher));
  caf::send_as(chan_b, batcher, features_atom::value, feature_chunk{2, 0, feats[1], true});
  expect((features_atom, feature_chunk), from(chan_b).to(batcher));
  CAF_REQUIRE(sched.trigger_timeout());
  expect((flush_atom), from(batcher).to(batcher));

  // Channel a goes away once the step's first blocks are out at the experts: the drop reaches
  // the batcher before their replies.
  for (const auto& e : experts) CAF_CHECK(has_mail(e));
  caf::send_as(chan_a, batcher, drop_atom::value, channel_id{1});
  expect((drop_atom, channel_id), from(chan_a).to(batcher));
  const int layers = run_step_layers(batcher, experts, {chan_a, chan_b});
  CAF_CHECK_EQUAL(layers, res->model->arch().n_layers);
  disallow((logits_atom, logits_chunk), from(batcher).to(chan_a));
  expect((logits_atom, logits_chunk), from(batcher).to(chan_b));
  CAF_CHECK(!sched.has_job());
  CAF_CHECK(got_a->empty());
  CAF_REQUIRE_EQUAL(got_b->size(), 1u);
  CAF_CHECK_EQUAL(got_b->front().channel, channel_id{2});
  CAF_CHECK(got_b->front().last);
  CAF_CHECK(got_b->front().error.empty());
  CAF_CHECK_LESS(max_abs_diff(got_b->front().logits, offline_logits(1)), 1e-3);

  stop(t);
}

CAF_TEST(a step given up while an expert holds a block reports the utterance lost once and ignores the late reply) {
  auto real = spawn_experts();
  auto held = std::make_shared<std::vector<held_block>>();
  auto seen = std::make_shared<std::vector<block_msg>>();
  // Shard 1 answers through the holding expert; shard 0 answers at once.
  auto holder = sys.spawn(holding_expert, real[1], held, seen);
  auto batcher = spawn_batcher({real[0], holder});
  auto got = std::make_shared<std::vector<logits_chunk>>();
  auto chan = sys.spawn(recorder, got);
  sched.run();

  caf::send_as(chan, batcher, features_atom::value, feature_chunk{1, 0, feats[0], true});
  expect((features_atom, feature_chunk), from(chan).to(batcher));
  CAF_REQUIRE(sched.trigger_timeout());
  expect((flush_atom), from(batcher).to(batcher));
  // Layer 0: both shards are asked; shard 0 answers, shard 1's holder keeps its block.
  CAF_REQUIRE(has_mail(holder));
  const bool shard0_asked = has_mail(real[0]);
  if (shard0_asked) {
    expect((block_atom, block_msg), from(batcher).to(real[0]));
    expect((reply_msg), from(real[0]).to(batcher));
  }
  expect((block_atom, block_msg), from(batcher).to(holder));
  CAF_REQUIRE_EQUAL(held->size(), 1u);
  CAF_CHECK(!sched.has_job());  // the batcher waits for shard 1 (its request's timeout is pending)
  disallow((logits_atom, logits_chunk), from(batcher).to(chan));

  // The request times out; there is no spillway to fail over to: the step is given up. The
  // timeouts fire in the order the requests went out: shard 0's first (its request was
  // answered: the batcher takes the error and ignores it), then shard 1's.
  if (shard0_asked) {
    CAF_REQUIRE(sched.trigger_timeout());
    expect((caf::error), from(_).to(batcher));
    CAF_CHECK(!sched.has_job());
    CAF_CHECK(got->empty());
  }
  CAF_REQUIRE(sched.trigger_timeout());
  expect((caf::error), from(_).to(batcher));
  expect((logits_atom, logits_chunk), from(batcher).to(chan));
  CAF_REQUIRE_EQUAL(got->size(), 1u);
  CAF_CHECK_EQUAL(got->front().utterance, 0);
  CAF_CHECK(got->front().last);
  CAF_CHECK(!got->front().error.empty());
  CAF_CHECK(!sched.has_job());

  // The late reply: the real expert computes the held block and answers the batcher, which
  // takes the message and does nothing with it.
  anon_send(holder, release_atom::value);
  expect((release_atom), from(_).to(holder));
  expect((block_atom, block_msg), from(batcher).to(real[1]));
  expect((reply_msg), from(real[1]).to(batcher));
  disallow((logits_atom, logits_chunk), from(batcher).to(chan));
  for (const auto& e : {block_sink_actor{real[0]}, block_sink_actor{holder}})
    disallow((block_atom, block_msg), from(batcher).to(e));
  CAF_CHECK(!sched.has_job());
  CAF_CHECK_EQUAL(got->size(), 1u);

  // The next utterance's step sends shard 1 a block in new buffers, not the held ones.
  caf::send_as(chan, batcher, features_atom::value, feature_chunk{1, 1, feats[0], true});
  expect((features_atom, feature_chunk), from(chan).to(batcher));
  CAF_REQUIRE(sched.trigger_timeout());
  expect((flush_atom), from(batcher).to(batcher));
  if (has_mail(real[0])) expect((block_atom, block_msg), from(batcher).to(real[0]));
  expect((block_atom, block_msg), from(batcher).to(holder));
  CAF_REQUIRE_EQUAL(seen->size(), 2u);
  CAF_CHECK((*seen)[1].block.get() != (*seen)[0].block.get());
  CAF_CHECK((*seen)[1].reply.get() != (*seen)[0].reply.get());

  for (const auto& a : real) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(holder, caf::exit_reason::user_shutdown);
  for (const auto& a : {caf::actor_cast<caf::actor>(batcher), chan}) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(a lane killed while it holds an utterance is restarted and only the channel with an utterance on it loses one) {
  conf.engine.lanes = 2;
  conf.engine.offline_gather = true;
  auto r = engine_resources::create(conf, res->model);
  CAF_REQUIRE(r.has_value());
  res = *r;
  auto sup = sys.spawn(supervisor_actor, res, metrics_actor_type{}, 2, std::vector<double>{});
  auto log = std::make_shared<test::subscriber_log>();
  auto sub = sys.spawn(test::opening_subscriber, sup, 2, log);
  anon_send(sub, test::go_atom::value);
  sched.run();
  CAF_REQUIRE_EQUAL(log->opened.size(), 2u);
  CAF_REQUIRE(log->opened[0].ok && log->opened[1].ok);
  // Utterances are placed on the least-loaded lane as they start: a's (first) on lane 0, b's on lane 1.
  const auto a = log->opened[0], b = log->opened[1];
  caf::actor lane0;
  auto asker = sys.spawn([&lane0, sup](caf::event_based_actor* self) {
    self->request(sup, caf::infinite, shards_atom::value)
        .then([&lane0](std::vector<expert_actor_type>&, std::vector<spillway_actor_type>&, caf::actor& l) {
          lane0 = l;
        });
  });
  sched.run();
  CAF_REQUIRE(lane0 != nullptr);

  // One utterance on each channel; no timer fires, so both lanes only gather (offline_gather).
  CAF_REQUIRE(speech.channels[0].regions.size() >= 2);
  anon_send(a.handle, segment_atom::value, region(0, 0), speech.channels[0].regions[0].start_sample);
  anon_send(b.handle, segment_atom::value, region(1, 0), speech.channels[1].regions[0].start_sample);
  sched.run();
  CAF_CHECK(!sched.has_job());
  CAF_CHECK(log->finals.empty());

  anon_send_exit(lane0, caf::exit_reason::kill);
  expect((caf::exit_msg), from(_).to(lane0));
  expect((caf::down_msg), from(_).to(sup));
  // Every channel hears that lane 0's actor died (the supervisor has put a new one in its slot
  // for their next utterances); only a, whose utterance was on the dead actor, loses one.
  CAF_REQUIRE(has_mail(a.handle));
  const auto restart = extract<batcher_atom, int32_t, caf::actor_addr>(a.handle);
  CAF_CHECK_EQUAL(std::get<1>(restart), 0);
  CAF_CHECK(std::get<2>(restart) == lane0.address());
  expect((batcher_atom, int32_t, caf::actor_addr), from(sup).to(a.handle).with(_, 0, lane0.address()));
  expect((transcript_event), from(a.handle).to(sub));
  expect((batcher_atom, int32_t, caf::actor_addr), from(sup).to(b.handle).with(_, 0, lane0.address()));
  disallow((transcript_event), from(b.handle).to(sub));
  CAF_REQUIRE_EQUAL(log->finals.size(), 1u);
  CAF_REQUIRE_EQUAL(log->finals[a.channel].size(), 1u);
  CAF_CHECK_EQUAL(log->finals[a.channel][0].utterance, 0);
  CAF_CHECK(log->finals[a.channel][0].error.find("lost") != std::string::npos);

  // Channel a's next utterance goes to the restarted lane; both channels end and drain.
  anon_send(a.handle, segment_atom::value, region(0, 1), speech.channels[0].regions[1].start_sample);
  anon_send(a.handle, end_atom::value);
  anon_send(b.handle, end_atom::value);
  for (int round = 0; round < 100000 && log->drained.size() < 2; ++round) {
    sched.run();
    if (log->drained.size() < 2) sched.trigger_timeout();  // the batching windows
  }
  CAF_REQUIRE_EQUAL(log->drained.size(), 2u);
  CAF_REQUIRE_EQUAL(log->finals[a.channel].size(), 2u);
  CAF_REQUIRE_EQUAL(log->finals[b.channel].size(), 1u);
  for (const auto* f : {&log->finals[a.channel][1], &log->finals[b.channel][0]}) {
    CAF_CHECK(f->error.empty());
    CAF_CHECK(!f->text.empty());
  }
  CAF_CHECK_EQUAL(log->finals[a.channel][1].utterance, 1);

  anon_send_exit(sup, caf::exit_reason::user_shutdown);
  anon_send_exit(sub, caf::exit_reason::user_shutdown);
  anon_send_exit(asker, caf::exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(a lane handed the decoder of an utterance answers with decoded results and no logits and its final equals decoding the offline logits) {
  // [engine] lane_decoding: the channel sends the decoder with the first features; the lane
  // decodes after each step. The reference: a decoder of the same stream options fed the offline
  // forward's logits in one go.
  auto lane = sys.spawn(lane_actor, res, metrics_actor_type{}, supervisor_actor_type{}, 0, -1);
  auto got = std::make_shared<std::vector<logits_chunk>>();
  auto chan = sys.spawn(recorder, got);
  sched.run();
  auto prepared = res->recognizer->prepare({});
  CAF_REQUIRE(prepared.has_value());
  auto dec = res->recognizer->make_decoder(*prepared);
  auto ref_dec = res->recognizer->make_decoder(*prepared);
  CAF_REQUIRE(dec.has_value() && ref_dec.has_value());
  feature_chunk c{1, 0, feats[0], true};
  c.decoder = std::make_shared<moe::ctc_decoder>(std::move(*dec));
  caf::send_as(chan, lane, features_atom::value, c);
  expect((features_atom, feature_chunk), from(chan).to(lane));
  CAF_CHECK(!has_mail(chan));  // nothing before the window ends
  for (int round = 0; round < 1000 && (got->empty() || !got->back().last); ++round) {
    if (sched.has_job()) sched.run();
    else CAF_REQUIRE(sched.trigger_timeout());
  }
  CAF_REQUIRE(!got->empty());
  CAF_REQUIRE(got->back().last);
  int64_t frames = 0;
  for (const auto& g : *got) {
    CAF_CHECK(g.decoded);
    CAF_CHECK(g.logits.empty());
    CAF_CHECK(g.error.empty());
    frames += g.frames;
  }
  const auto ref_logits = offline_logits(0);
  const auto vocab = res->model->arch().vocab_size;
  const auto n = static_cast<int32_t>(ref_logits.size() / static_cast<std::size_t>(vocab));
  CAF_CHECK_EQUAL(frames, n);
  CAF_REQUIRE(ref_dec->accept(ref_logits, n).has_value());
  const auto ref = ref_dec->finalize();
  CAF_CHECK(!ref.text.empty());
  CAF_CHECK_EQUAL(got->back().text, ref.text);
  CAF_REQUIRE_EQUAL(got->back().words.size(), ref.words.size());
  for (std::size_t i = 0; i < ref.words.size(); ++i) {
    CAF_CHECK_EQUAL(got->back().words[i].word, ref.words[i].word);
    CAF_CHECK_EQUAL(got->back().words[i].start_ms, ref.words[i].start_ms);
    CAF_CHECK_EQUAL(got->back().words[i].end_ms, ref.words[i].end_ms);
  }
  for (const auto& a : {caf::actor_cast<caf::actor>(lane), chan}) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(chunks of an utterance already reported lost start no stream and the next utterance runs) {
  auto lane = sys.spawn(lane_actor, res, metrics_actor_type{}, supervisor_actor_type{}, 0, -1);
  auto got = std::make_shared<std::vector<logits_chunk>>();
  auto chan = sys.spawn(recorder, got);
  sched.run();
  // Utterance 0's first chunk is not whole frames: lost at once, reported to the channel.
  std::vector<float> bad(feats[0].begin(), feats[0].begin() + n_mels * 10 + 3);
  caf::send_as(chan, lane, features_atom::value, feature_chunk{1, 0, bad, false});
  expect((features_atom, feature_chunk), from(chan).to(lane));
  expect((logits_atom, logits_chunk), from(lane).to(chan));
  CAF_REQUIRE_EQUAL(got->size(), 1u);
  CAF_CHECK(!got->front().error.empty());
  CAF_CHECK(got->front().last);
  // The rest of utterance 0, already on its way when the loss was reported, then its last chunk:
  // taken and ignored (a stream made for them would run in the next window and send logits).
  caf::send_as(chan, lane, features_atom::value, feature_chunk{1, 0, feats[0], false});
  expect((features_atom, feature_chunk), from(chan).to(lane));
  caf::send_as(chan, lane, features_atom::value, feature_chunk{1, 0, {}, true});
  expect((features_atom, feature_chunk), from(chan).to(lane));
  for (int i = 0; i < 4 && sched.trigger_timeout(); ++i) sched.run();
  CAF_CHECK_EQUAL(got->size(), 1u);
  // The channel's next utterance runs as any other.
  caf::send_as(chan, lane, features_atom::value, feature_chunk{1, 1, feats[0], true});
  expect((features_atom, feature_chunk), from(chan).to(lane));
  for (int round = 0; round < 1000 && (got->size() < 2 || !got->back().last); ++round) {
    if (sched.has_job()) sched.run();
    else CAF_REQUIRE(sched.trigger_timeout());
  }
  CAF_REQUIRE_EQUAL(got->size(), 2u);  // a whole utterance in one step (max_chunks_per_step)
  for (std::size_t i = 1; i < got->size(); ++i) {
    CAF_CHECK_EQUAL((*got)[i].utterance, 1);
    CAF_CHECK((*got)[i].error.empty());
  }
  CAF_CHECK(got->back().last);
  CAF_CHECK_LESS(max_abs_diff(got->back().logits, offline_logits(0)), 1e-3);
  for (const auto& a : {caf::actor_cast<caf::actor>(lane), chan}) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST(with live priority a live stream goes into a full step before an older offline one and without it after) {
  // The budget holds one stream's step: the first stream picked fills it and the other waits
  // for the lane's next step. Channel a's features are offline (a file segment) and ready first;
  // channel b's are live.
  conf.engine.token_budget = 16;
  for (const bool priority : {true, false}) {
    CAF_MESSAGE("live_priority = " << priority);
    conf.engine.live_priority = priority;
    auto [lane, chan_a, chan_b, got_a, got_b] = lane_with_two_recorders();
    for (const auto& f : feats) CAF_REQUIRE_GREATER(static_cast<int64_t>(f.size()) / n_mels / 4, 16);  // > budget

    // b's first frames (too few for a chunk: nothing is ready) put a live stream on the lane,
    // so a's offline features wait for the window instead of being stepped at once (8).
    const auto split = static_cast<std::ptrdiff_t>(4 * n_mels);
    const std::vector<float> b_head(feats[1].begin(), feats[1].begin() + split);
    const std::vector<float> b_rest(feats[1].begin() + split, feats[1].end());
    caf::send_as(chan_b, lane, features_atom::value, feature_chunk{2, 0, b_head, false});
    expect((features_atom, feature_chunk), from(chan_b).to(lane));
    CAF_CHECK(!sched.has_job());
    feature_chunk offline{1, 0, feats[0], true};
    offline.offline = true;
    caf::send_as(chan_a, lane, features_atom::value, offline);
    expect((features_atom, feature_chunk), from(chan_a).to(lane));
    CAF_CHECK(!sched.has_job());
    caf::send_as(chan_b, lane, features_atom::value, feature_chunk{2, 0, b_rest, true});
    expect((features_atom, feature_chunk), from(chan_b).to(lane));
    CAF_CHECK(!sched.has_job());

    // The window ends: the first step answers one channel only, then the lane's next step
    // (its own flush) the other.
    const auto first = priority ? chan_b : chan_a, second = priority ? chan_a : chan_b;
    // Timers one by one until the lane's window fires (the previous round's lane left one for
    // an actor now gone, due earlier).
    while (!has_mail(lane)) CAF_REQUIRE(sched.trigger_timeout());
    expect((flush_atom), from(lane).to(lane));
    expect((logits_atom, logits_chunk), from(lane).to(first));
    disallow((logits_atom, logits_chunk), from(lane).to(second));
    expect((flush_atom), from(lane).to(lane));
    expect((logits_atom, logits_chunk), from(lane).to(second));
    sched.run();
    CAF_REQUIRE_EQUAL(got_a->size(), 1u);
    CAF_REQUIRE_EQUAL(got_b->size(), 1u);
    // Each is its whole utterance, equal to the offline forward: the order changed nothing else.
    CAF_CHECK_LESS(max_abs_diff(got_a->front().logits, offline_logits(0)), 1e-3);
    CAF_CHECK_LESS(max_abs_diff(got_b->front().logits, offline_logits(1)), 1e-3);
    for (const auto& a : {caf::actor_cast<caf::actor>(lane), chan_a, chan_b}) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    sched.run();
  }
}

CAF_TEST(offline features on a lane with no live stream are stepped at once without waiting for the window) {
  auto [lane, chan_a, chan_b, got_a, got_b] = lane_with_two_recorders();
  const auto timers_before = sched.clock().schedule().size();
  feature_chunk offline{1, 0, feats[0], true};
  offline.offline = true;
  caf::send_as(chan_a, lane, features_atom::value, offline);
  expect((features_atom, feature_chunk), from(chan_a).to(lane));
  // No window: the logits come without any timer firing, and no flush was scheduled for it.
  expect((logits_atom, logits_chunk), from(lane).to(chan_a));
  CAF_CHECK_EQUAL(sched.clock().schedule().size(), timers_before);
  CAF_REQUIRE_EQUAL(got_a->size(), 1u);
  CAF_CHECK_LESS(max_abs_diff(got_a->front().logits, offline_logits(0)), 1e-3);
  sched.run();  // the lane's own bookkeeping after the step; nothing more for a
  CAF_CHECK_EQUAL(got_a->size(), 1u);
  // A live utterance on the same lane still waits for its window.
  caf::send_as(chan_b, lane, features_atom::value, feature_chunk{2, 0, feats[1], true});
  expect((features_atom, feature_chunk), from(chan_b).to(lane));
  CAF_CHECK(!sched.has_job());
  CAF_CHECK(got_b->empty());
  while (!has_mail(lane)) CAF_REQUIRE(sched.trigger_timeout());
  expect((flush_atom), from(lane).to(lane));
  expect((logits_atom, logits_chunk), from(lane).to(chan_b));
  CAF_REQUIRE_EQUAL(got_b->size(), 1u);
  CAF_CHECK_LESS(max_abs_diff(got_b->front().logits, offline_logits(1)), 1e-3);
  for (const auto& a : {caf::actor_cast<caf::actor>(lane), chan_a, chan_b}) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  sched.run();
}

CAF_TEST_FIXTURE_SCOPE_END()
