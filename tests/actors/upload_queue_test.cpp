// The engine's upload queue without the network: each upload is answered exactly once, a full
// queue refuses on the caller's thread, places and channel reservations come back when an upload
// is answered, and the limits are derived from [upload] and engine.max_channels.
#include "tests/actors/engine_test_util.hpp"

#include <future>
#include <thread>

#include "actors/upload_queue.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

constexpr auto wait_limit = std::chrono::seconds(120);  // a failure guard, never a synchronisation

// A submitted upload: its reply with the id of the thread that delivered it, and how many times
// it was answered.
struct submitted {
  std::future<std::pair<actors::upload_reply, std::thread::id>> reply;
  std::shared_ptr<std::atomic<int>> answers;
};

// Submits a headerless 8 kHz mu-law body of `seconds` and `channels` from `client`.
submitted submit_silence(actors::engine& e, int seconds, int channels, const std::string& client) {
  auto p = std::make_shared<std::promise<std::pair<actors::upload_reply, std::thread::id>>>();
  submitted out{p->get_future(), std::make_shared<std::atomic<int>>(0)};
  actors::upload_request req;
  req.body.assign(static_cast<std::size_t>(seconds * 8000 * channels), static_cast<char>(0xFF));
  req.raw = actors::raw_audio_format{"mulaw", 8000, channels};
  req.client = client;
  req.done = [p, answers = out.answers](actors::upload_reply r) {
    if (answers->fetch_add(1) == 0) p->set_value({std::move(r), std::this_thread::get_id()});
  };
  e.uploads().submit(std::move(req));
  return out;
}

}  // namespace

TEST_SUITE("upload_queue") {
  TEST_CASE("limits: per-upload and per-client channel shares of engine.max_channels, never below one channel") {
    auto cfg = base_config();
    cfg.engine.max_channels = 10;
    cfg.upload.workers = 2;
    cfg.upload.queue_depth = 3;
    cfg.upload.channel_share = 0.25;
    cfg.upload.client_channel_share = 0.5;
    auto l = actors::upload_limits::from(cfg);
    CHECK(l.capacity == 5);
    CHECK(l.channels_per_upload == 2);  // floor(10 * 0.25)
    CHECK(l.channels_per_client == 5);
    cfg.upload.channel_share = 0.01;
    cfg.upload.client_channel_share = 0.0;
    l = actors::upload_limits::from(cfg);
    CHECK(l.channels_per_upload == 1);
    CHECK(l.channels_per_client == 1);
  }

  TEST_CASE("submit: a full queue refuses with 503 on the caller's thread, each upload is answered once, places come back") {
    auto cfg = base_config();
    cfg.upload.workers = 1;
    cfg.upload.queue_depth = 1;
    cfg.upload.retry_after_s = 9;
    // Declared before the engine, so they outlive its workers even when a check fails early.
    std::promise<void> entered, open;
    auto opened = open.get_future().share();
    std::atomic<int> calls{0};
    auto e = actors::engine::start(resources(cfg));
    std::atomic<bool> released{false};
    auto release = [&] {
      if (!released.exchange(true)) open.set_value();
    };
    // Releases the worker however the test ends, before the engine waits for it.
    std::shared_ptr<void> release_on_exit(nullptr, [&](void*) { release(); });
    e->uploads().set_before_decode([&] {
      if (calls.fetch_add(1) == 0) entered.set_value();
      opened.wait();
    });
    auto a = submit_silence(*e, 1, 1, "a");
    auto b = submit_silence(*e, 1, 1, "b");  // waits for the held worker
    REQUIRE(entered.get_future().wait_for(wait_limit) == std::future_status::ready);
    CHECK(e->uploads().in_flight() == 2);
    auto c = submit_silence(*e, 1, 1, "c");
    REQUIRE(c.reply.wait_for(std::chrono::seconds(0)) == std::future_status::ready);  // answered inside submit
    const auto [refused, thread] = c.reply.get();
    CHECK(refused.status == 503);
    CHECK(refused.retry_after_s == 9);
    CHECK(thread == std::this_thread::get_id());
    CHECK(e->uploads().in_flight() == 2);

    release();
    REQUIRE(a.reply.wait_for(wait_limit) == std::future_status::ready);
    REQUIRE(b.reply.wait_for(wait_limit) == std::future_status::ready);
    CHECK(a.reply.get().first.status == 200);
    CHECK(b.reply.get().first.status == 200);
    CHECK(e->uploads().in_flight() == 0);
    auto d = submit_silence(*e, 1, 1, "c");
    REQUIRE(d.reply.wait_for(wait_limit) == std::future_status::ready);
    CHECK(d.reply.get().first.status == 200);
    CHECK(calls == 3);
    e.reset();  // every actor gone: no late second answer can come
    for (const auto* s : {&a, &b, &c, &d}) CHECK(s->answers->load() == 1);
  }
}
