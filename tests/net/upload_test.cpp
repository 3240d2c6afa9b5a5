// POST /v1/transcribe as a job on the engine: while an upload is being decoded the network threads
// still serve health checks and live streams (whose text is what they get alone); a full upload
// queue answers 503 with Retry-After; a file too long (from its WAV, raw or Ogg Opus headers,
// before any decoding) or with more channels than one upload may open answers 413; a client past
// its share of engine channels answers 429 with Retry-After while another client is served.
// Workers are held busy with the upload queue's test hook and released with explicit signals.
#include "tests/net/net_test_util.hpp"

#include <atomic>
#include <fstream>
#include <future>
#include <iterator>

#include "tests/common/audio_tools.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

const std::string start_8k = R"({"type":"start","sample_rate":8000,"encoding":"pcm_s16le","channels":1})";
const std::string end_msg = R"({"type":"end"})";
constexpr auto wait_limit = std::chrono::seconds(120);  // a failure guard, never a synchronisation
constexpr auto refusal_limit = std::chrono::seconds(30);  // the same, for answers due at once

std::vector<std::string> finals_of(const ws_result& r) {
  std::vector<std::string> out;
  for (const auto& m : r.messages)
    if (m.value("type", "") == "final") out.push_back(m["text"]);
  return out;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct upload_answer {
  int status = 0;
  json body;
  std::string retry_after;
};

// POSTs `body` to `target` from the local address `from` (any 127.x.y.z reaches the server).
// Status 0 when no answer comes within `deadline` (a failure guard: an upload wrongly queued
// behind a held worker would otherwise hang the test instead of failing it).
upload_answer post_upload(uint16_t port, const std::string& target, std::string body,
                          const std::string& from = "127.0.0.1", std::chrono::seconds deadline = wait_limit) {
  asio::io_context ioc;
  tcp::socket socket(ioc);
  socket.open(tcp::v4());
  socket.bind(tcp::endpoint(asio::ip::make_address(from), 0));
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  beast::tcp_stream stream(std::move(socket));
  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.body() = std::move(body);
  req.prepare_payload();
  http::write(stream, req);
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  beast::error_code ec;
  stream.expires_after(deadline);
  http::async_read(stream, buf, parser, [&](beast::error_code e, std::size_t) { ec = e; });
  ioc.run();
  upload_answer a;
  if (ec) return a;
  auto res = parser.release();
  a.status = static_cast<int>(res.result_int());
  a.body = json::parse(res.body(), nullptr, false);
  a.retry_after = std::string(res[http::field::retry_after]);
  return a;
}

// GET `target`; status 0 when no answer comes within `deadline` (a failure guard: a network
// thread stuck in an upload would otherwise hang the test instead of failing it).
int get_status_within(uint16_t port, const std::string& target, std::chrono::seconds deadline) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  http::write(stream, req);
  beast::flat_buffer buf;
  http::response<http::string_body> res;
  beast::error_code ec;
  stream.expires_after(deadline);
  http::async_read(stream, buf, res, [&](beast::error_code e, std::size_t) { ec = e; });
  ioc.run();
  return ec ? 0 : static_cast<int>(res.result_int());
}

// Holds every upload worker in the queue's before-decode hook until released; says when the
// first one got there and counts how many did.
struct worker_gate {
  std::promise<void> entered_promise, open_promise;
  std::shared_future<void> entered = entered_promise.get_future().share();
  std::shared_future<void> opened = open_promise.get_future().share();
  std::atomic<int> calls{0};
  std::atomic<bool> released{false};

  static std::function<void()> hook(const std::shared_ptr<worker_gate>& g) {
    return [g] {
      if (g->calls.fetch_add(1) == 0) g->entered_promise.set_value();
      g->opened.wait();
    };
  }
  void release() {
    if (!released.exchange(true)) open_promise.set_value();
  }
};

// Releases the gate however the test ends, so no worker stays blocked past the engine.
struct release_on_exit {
  std::shared_ptr<worker_gate> g;
  ~release_on_exit() { g->release(); }
};

// `seconds` of silence as 8 kHz mu-law bytes (a headerless body).
std::string mulaw_silence(int seconds, int channels = 1) {
  return std::string(static_cast<std::size_t>(seconds * 8000 * channels), static_cast<char>(0xFF));
}

}  // namespace

TEST_SUITE("upload") {
  TEST_CASE("an upload being decoded blocks neither /healthz nor a live stream, whose text is what it gets alone") {
    config::sluice_config cfg;
    cfg.upload.workers = 1;
    cfg.server.io_threads = 1;  // the worst case: one network thread for everything
    served s(cfg);
    const auto frames = call_pcm16_frames();
    const auto alone = ws_session(s.port, "/v1/stream", {start_8k}, frames, {end_msg});
    REQUIRE(alone.close_code == 1000);
    REQUIRE(finals_of(alone).size() >= 2);

    auto gate = std::make_shared<worker_gate>();
    release_on_exit guard{gate};
    s.engine->uploads().set_before_decode(worker_gate::hook(gate));
    const std::string wav = file_text(SLUICE_TEST_DATA_DIR "/sample_call_8k_mulaw_stereo.wav");
    auto upload = std::async(std::launch::async, [&] { return post_upload(s.port, "/v1/transcribe", wav); });
    REQUIRE(gate->entered.wait_for(wait_limit) == std::future_status::ready);

    // The worker holds the upload; the network thread is free.
    REQUIRE(get_status_within(s.port, "/healthz", std::chrono::seconds(30)) == 200);
    const auto during = ws_session(s.port, "/v1/stream", {start_8k}, frames, {end_msg});
    CHECK(during.close_code == 1000);
    CHECK(finals_of(during) == finals_of(alone));
    CHECK(upload.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);  // still held

    gate->release();
    REQUIRE(upload.wait_for(wait_limit) == std::future_status::ready);
    const auto answer = upload.get();
    REQUIRE(answer.status == 200);
    CHECK(answer.body["channels"].size() == 2);
    CHECK(answer.body["sample_rate"] == 8000);
    CHECK(s.engine->uploads().in_flight() == 0);
  }

  TEST_CASE("a full upload queue answers 503 with Retry-After, and once the first is answered its place is free again") {
    config::sluice_config cfg;
    cfg.upload.workers = 1;
    cfg.upload.queue_depth = 0;  // one upload at a time
    cfg.upload.retry_after_s = 7;
    served s(cfg);
    auto gate = std::make_shared<worker_gate>();
    release_on_exit guard{gate};
    s.engine->uploads().set_before_decode(worker_gate::hook(gate));
    const std::string target = "/v1/transcribe?sample_rate=8000&encoding=mulaw";
    auto first = std::async(std::launch::async, [&] { return post_upload(s.port, target, mulaw_silence(1)); });
    REQUIRE(gate->entered.wait_for(wait_limit) == std::future_status::ready);

    const auto refused = post_upload(s.port, target, mulaw_silence(1), "127.0.0.1", refusal_limit);
    CHECK(refused.status == 503);
    CHECK(refused.retry_after == "7");
    REQUIRE(refused.body.is_object());
    CHECK(refused.body["limit"] == "upload.queue_depth");
    CHECK(refused.body["error"].get<std::string>().find("queue is full") != std::string::npos);

    gate->release();
    REQUIRE(first.wait_for(wait_limit) == std::future_status::ready);
    CHECK(first.get().status == 200);
    const auto again = post_upload(s.port, target, mulaw_silence(1));
    CHECK(again.status == 200);
    CHECK(again.retry_after.empty());
    CHECK(gate->calls == 2);  // the refused upload never reached a worker
  }

  TEST_CASE("duration cap: WAV, raw and Ogg Opus uploads over upload.max_seconds get 413 from their headers, undecoded") {
    config::sluice_config cfg;
    cfg.upload.max_seconds = 10;
    served s(cfg);
    auto gate = std::make_shared<worker_gate>();
    release_on_exit guard{gate};
    gate->release();  // never holds: it only counts the uploads that reached a worker
    s.engine->uploads().set_before_decode(worker_gate::hook(gate));

    temp_dir dir;
    REQUIRE(sox("-D -n -r 8000 -c 1 -e mu-law " + dir.file("long.wav") + " synth 12 sine 440 gain -12"));
    REQUIRE(sox("-D -n -r 16000 -c 1 -b 16 " + dir.file("long16.wav") + " synth 12 sine 440 gain -12"));
    REQUIRE(run("opusenc --quiet " + dir.file("long16.wav") + " " + dir.file("long.opus")) == 0);
    REQUIRE(sox("-D -n -r 8000 -c 1 -e mu-law " + dir.file("short.wav") + " synth 9 sine 440 gain -12"));

    struct too_long {
      const char* what;
      std::string target, body;
    };
    const std::vector<too_long> cases = {
        {"wav", "/v1/transcribe", file_text(dir.file("long.wav"))},
        {"raw", "/v1/transcribe?sample_rate=8000&encoding=mulaw", mulaw_silence(12)},
        {"ogg opus", "/v1/transcribe", file_text(dir.file("long.opus"))},
    };
    for (const auto& c : cases) {
      CAPTURE(c.what);
      const auto a = post_upload(s.port, c.target, c.body);
      CHECK(a.status == 413);
      REQUIRE(a.body.is_object());
      CHECK(a.body["limit"] == "upload.max_seconds");
      const auto why = a.body["error"].get<std::string>();
      CAPTURE(why);
      CHECK(why.find("12 s long") != std::string::npos);
      CHECK(why.find("10 s (upload.max_seconds)") != std::string::npos);
    }
    CHECK(gate->calls == 0);  // refused from the headers: no worker decoded anything
    // Under the cap, served as before.
    CHECK(post_upload(s.port, "/v1/transcribe", file_text(dir.file("short.wav"))).status == 200);
    CHECK(post_upload(s.port, "/v1/transcribe?sample_rate=8000&encoding=mulaw", mulaw_silence(9)).status == 200);
    CHECK(gate->calls == 2);
  }

  TEST_CASE("channel share: more channels than one upload may open is 413, a client past its share is 429, another client is served") {
    config::sluice_config cfg;
    cfg.engine.max_channels = 8;
    cfg.upload.channel_share = 0.25;         // 2 channels per upload
    cfg.upload.client_channel_share = 0.25;  // 2 channels per client address at once
    cfg.upload.workers = 1;
    cfg.upload.queue_depth = 4;
    cfg.upload.retry_after_s = 3;
    served s(cfg);
    auto gate = std::make_shared<worker_gate>();
    release_on_exit guard{gate};
    s.engine->uploads().set_before_decode(worker_gate::hook(gate));

    const auto wide = post_upload(s.port, "/v1/transcribe?sample_rate=8000&encoding=mulaw&channels=3", mulaw_silence(1, 3));
    CHECK(wide.status == 413);
    CHECK(wide.retry_after.empty());  // waiting will not help
    REQUIRE(wide.body.is_object());
    CHECK(wide.body["limit"] == "upload.channel_share");
    CHECK(wide.body["error"].get<std::string>().find("3 channels; one upload may open at most 2") != std::string::npos);

    const std::string stereo = "/v1/transcribe?sample_rate=8000&encoding=mulaw&channels=2";
    auto held = std::async(std::launch::async, [&] { return post_upload(s.port, stereo, mulaw_silence(1, 2)); });
    REQUIRE(gate->entered.wait_for(wait_limit) == std::future_status::ready);
    // Its 2 channels are this client's share: one more channel is refused for now...
    const auto busy =
        post_upload(s.port, "/v1/transcribe?sample_rate=8000&encoding=mulaw", mulaw_silence(1), "127.0.0.1", refusal_limit);
    CHECK(busy.status == 429);
    CHECK(busy.retry_after == "3");
    REQUIRE(busy.body.is_object());
    CHECK(busy.body["limit"] == "upload.client_channel_share");
    // ...while another client address is taken (queued behind the held worker).
    auto other = std::async(std::launch::async, [&] {
      return post_upload(s.port, "/v1/transcribe?sample_rate=8000&encoding=mulaw", mulaw_silence(1), "127.0.0.2");
    });

    gate->release();
    REQUIRE(held.wait_for(wait_limit) == std::future_status::ready);
    CHECK(held.get().status == 200);
    REQUIRE(other.wait_for(wait_limit) == std::future_status::ready);
    CHECK(other.get().status == 200);
    // Answered, the first client's channels are free again.
    CHECK(post_upload(s.port, stereo, mulaw_silence(1, 2)).status == 200);
  }
}
