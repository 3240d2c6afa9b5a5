// Expert actors and their messages: every message type survives CAF's binary serialization; an
// expert actor's reply equals running its shard directly; the same holds for an expert actor in
// a second actor system reached over loopback through the middleman (the block and the reply
// cross as bytes); FP8 blocks stay within the codec's error bound.
#include "tests/actors/engine_test_util.hpp"

#include <caf/io/all.hpp>

#include <cmath>

#include "actors/block_runner.hpp"
#include "actors/expert_actor.hpp"
#include "actors/system_config.hpp"
#include "moe/block_codec.hpp"
#include "moe/micro_batch.hpp"
#include "moe/stream_state.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {

template <class T>
T round_trip(caf::actor_system& sys, T x) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  REQUIRE_FALSE(sink(x));
  T y;
  caf::binary_deserializer source{sys, buf};
  REQUIRE_FALSE(source(y));
  return y;
}

// The blocks of layer 0 of a real micro-batch (two streams of the call) on a 2-shard placement.
struct layer_blocks {
  std::vector<moe::token_block> blocks;  // per shard
  moe::expert_placement placement;
};

layer_blocks make_blocks() {
  auto model = test::default_model();
  auto placement = *moe::expert_placement::contiguous(model->arch(), 2);
  auto res = test::resources(test::base_config());
  const auto segs = test::call_segments();
  std::vector<std::unique_ptr<moe::stream_state>> streams;
  std::vector<moe::stream_state*> ptrs;
  for (int i = 0; i < 2; ++i) {
    auto s = moe::stream_state::create(*model, res->window);
    REQUIRE(s.has_value());
    streams.push_back(std::make_unique<moe::stream_state>(std::move(*s)));
    auto f = res->fbank->compute(segs[static_cast<std::size_t>(i)].samples);
    REQUIRE(streams.back()->accept_fbank(f.data(), static_cast<int64_t>(f.size() / res->fbank->num_mels())));
    REQUIRE(streams.back()->finish());
    ptrs.push_back(streams.back().get());
  }
  moe::micro_batch mb(*model, 5);
  REQUIRE(mb.begin(ptrs, 2));
  REQUIRE(mb.run_dense());
  REQUIRE(mb.dispatch(placement));
  layer_blocks out{{}, placement};
  for (int32_t b = 0; b < 2; ++b) {
    REQUIRE(mb.has_block(b));
    moe::token_block blk;
    REQUIRE(mb.fill_block(b, blk));
    out.blocks.push_back(std::move(blk));
  }
  mb.abort();
  return out;
}

block_msg to_msg(const moe::token_block& b, bool fp8) {
  block_msg m{block_encoding::f32, std::make_shared<moe::token_block>(b), std::make_shared<fp8_rows>(),
              std::make_shared<moe::expert_output>()};
  if (fp8) {
    moe::encode_fp8(b.rows, b.d, m.fp8->q, m.fp8->scales);
    m.block->rows.clear();
    m.encoding = block_encoding::fp8_e4m3;
  }
  return m;
}

std::vector<float> direct(const moe::token_block& b, const moe::expert_placement& placement, int32_t shard) {
  auto s = moe::expert_shard::create(*test::default_model(), placement, shard);
  REQUIRE(s.has_value());
  moe::workspace ws;
  moe::expert_output out;
  REQUIRE(s->run(b, out, ws));
  return out.out;
}

}  // namespace

TEST_SUITE("expert_actor") {
  TEST_CASE("every message type survives binary serialization") {
    engine_system_config cfg;
    caf::actor_system sys{cfg};
    const auto lb = make_blocks();
    for (bool fp8 : {false, true}) {
      const auto m = to_msg(lb.blocks[0], fp8);
      const auto back = round_trip(sys, m);
      CHECK(back.encoding == m.encoding);
      CHECK(back.block->layer == m.block->layer);
      CHECK(back.block->step == m.block->step);
      CHECK(back.block->micro_batch == 5);
      CHECK(back.block->rows == m.block->rows);
      CHECK(back.block->pair_row == m.block->pair_row);
      CHECK(back.block->pair_expert == m.block->pair_expert);
      CHECK(back.block->pair_weight == m.block->pair_weight);
      CHECK(back.fp8->q == m.fp8->q);
      CHECK(back.fp8->scales == m.fp8->scales);
      CHECK(back.reply != nullptr);
      CHECK(back.wire_bytes() == m.wire_bytes());
    }
    auto out = std::make_shared<moe::expert_output>();
    out->d = 2;
    out->out = {1, 2, 3, 4};
    out->layer = 3;
    const auto r = round_trip(sys, reply_msg{out});
    CHECK(r.out->out == out->out);
    CHECK(r.out->layer == 3);
    const auto fc = round_trip(sys, feature_chunk{7, 2, {1.5f, 2.5f}, true});
    CHECK(fc.channel == 7);
    CHECK(fc.frames == std::vector<float>{1.5f, 2.5f});
    CHECK(fc.last);
    transcript_event ev{3, 1, true, "hello world", {{"hello", 0, 400, 0.9f}, {"world", 400, 800, 0.5f}}, 0, 800, ""};
    const auto ev2 = round_trip(sys, ev);
    CHECK(ev2.text == "hello world");
    REQUIRE(ev2.words.size() == 2);
    CHECK(ev2.words[1].word == "world");
    CHECK(ev2.words[1].end_ms == 800);
    actor_report rep;
    rep.name = "expert/0";
    rep.keys = {"pairs"};
    rep.counts = {12};
    rep.hists = {{1, 2, 3}};
    const auto rep2 = round_trip(sys, rep);
    CHECK(rep2.name == "expert/0");
    CHECK(rep2.counts == std::vector<double>{12});
    CHECK(rep2.hists == rep.hists);
  }

  TEST_CASE("an expert actor replies exactly what its shard computes, FP8 within the bound") {
    engine_system_config cfg(2);
    caf::actor_system sys{cfg};
    const auto lb = make_blocks();
    caf::scoped_actor self{sys};
    for (int32_t shard = 0; shard < 2; ++shard) {
      auto ex = sys.spawn(expert_actor_for, test::default_model(), lb.placement, shard, metrics_actor_type{}, 1000, int64_t{0}, moe::compute_options{});
      const auto want = direct(lb.blocks[static_cast<std::size_t>(shard)], lb.placement, shard);
      for (bool fp8 : {false, true}) {
        std::vector<float> got;
        self->request(ex, std::chrono::seconds(10), block_atom::value, to_msg(lb.blocks[static_cast<std::size_t>(shard)], fp8))
            .receive([&](reply_msg& r) { got = r.out->out; }, [&](caf::error& e) { FAIL(sys.render(e)); });
        REQUIRE(got.size() == want.size());
        double max_err = 0, max_ref = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
          max_err = std::max(max_err, std::fabs(double(got[i]) - want[i]));
          max_ref = std::max(max_ref, std::fabs(double(want[i])));
        }
        if (!fp8) CHECK(max_err == 0.0);
        else {
          MESSAGE("shard " << shard << " FP8 max abs error " << max_err << " of max " << max_ref);
          CHECK(max_err > 0.0);
          CHECK(max_err < 0.1 * max_ref);  // 2^-4 relative per input value, through two GEMMs
        }
      }
      // A block naming an expert of the other shard is refused with the reason.
      std::string err;
      self->request(ex, std::chrono::seconds(10), block_atom::value, to_msg(lb.blocks[static_cast<std::size_t>(1 - shard)], false))
          .receive([&](reply_msg&) {}, [&](caf::error& e) { err = sys.render(e); });
      CHECK(err.find("does not hold") != std::string::npos);
      caf::anon_send_exit(ex, caf::exit_reason::user_shutdown);
    }
  }

  TEST_CASE("an expert actor in a second actor system, through the middleman over loopback, gives the same reply") {
    engine_system_config cfg_b(2);
    cfg_b.load<caf::io::middleman>();
    caf::actor_system sys_b{cfg_b};
    engine_system_config cfg_a(2);
    cfg_a.load<caf::io::middleman>();
    caf::actor_system sys_a{cfg_a};
    const auto lb = make_blocks();
    auto ex = sys_b.spawn(expert_actor_for, test::default_model(), lb.placement, 1, metrics_actor_type{}, 1000, int64_t{0}, moe::compute_options{});
    auto port = sys_b.middleman().publish(ex, 0, "127.0.0.1");
    REQUIRE_MESSAGE(static_cast<bool>(port), (port ? std::string() : sys_b.render(port.error())));
    // Typed on both sides: the remote handle's interface is checked against the published one.
    auto remote = sys_a.middleman().remote_actor<expert_actor_type>("127.0.0.1", *port);
    REQUIRE_MESSAGE(static_cast<bool>(remote), (remote ? std::string() : sys_a.render(remote.error())));
    caf::scoped_actor self{sys_a};
    const auto want = direct(lb.blocks[1], lb.placement, 1);
    for (bool fp8 : {false, true}) {
      auto msg = to_msg(lb.blocks[1], fp8);
      std::vector<float> got;
      self->request(*remote, std::chrono::seconds(20), block_atom::value, msg)
          .receive([&](reply_msg& r) { got = r.out->out; }, [&](caf::error& e) { FAIL(sys_a.render(e)); });
      REQUIRE(got.size() == want.size());
      // The reply crossed as bytes into a new buffer: ours is untouched.
      CHECK(msg.reply->out.empty());
      if (!fp8) CHECK(got == want);
      else {
        double max_err = 0;
        for (std::size_t i = 0; i < got.size(); ++i) max_err = std::max(max_err, std::fabs(double(got[i]) - want[i]));
        CHECK(max_err < 0.5);
      }
    }
    caf::anon_send_exit(ex, caf::exit_reason::user_shutdown);
  }
}
