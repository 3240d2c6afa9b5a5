// The webhook (net/calls/webhook.hpp) against in-process Beast HTTP servers that capture its
// POSTs: a server that fails once and then answers 200 gets the call twice (retried) with the
// whole call document; a server that never answers is timed out and given up; while the webhook
// waits on such a server the registry's ingest goes on, and calls past the queue bound are
// counted, not waited for. stop(drain) posts what is queued within the drain, then abandons and
// counts the rest.
#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "net/calls/webhook.hpp"

using namespace sluice;
using namespace sluice::net::calls;

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// A one-thread blocking HTTP server on a free loopback port. `answer(n)` gives the status of the
// n-th request (0-based); 0 means: never answer (hold the connection until the server stops).
class capture_server {
 public:
  explicit capture_server(std::function<int(int)> answer)
      : acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)), answer_(std::move(answer)) {
    thread_ = std::thread([this] { serve(); });
  }
  ~capture_server() {
    stopping_ = true;
    release_.set_value();
    // A blocked accept() is not woken by closing the acceptor from another thread: connect.
    asio::io_context ioc;
    tcp::socket poke(ioc);
    beast::error_code ec;
    poke.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port()), ec);
    thread_.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()) + "/hooks/calls"; }
  // Resolves when the first request that is never answered has been read.
  std::shared_future<void> held() { return held_.get_future().share(); }
  std::vector<http::request<http::string_body>> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void serve() {
    auto released = release_.get_future().share();
    for (int n = 0;; ++n) {
      tcp::socket s(ioc_);
      beast::error_code ec;
      acceptor_.accept(s, ec);
      if (ec || stopping_) return;
      beast::flat_buffer buf;
      http::request<http::string_body> req;
      http::read(s, buf, req, ec);
      if (ec) continue;
      {
        std::lock_guard lock(mu_);
        requests_.push_back(req);
      }
      const int status = answer_(n);
      if (status == 0) {
        if (!held_set_) {
          held_set_ = true;
          held_.set_value();
        }
        released.wait();  // the test ends: the webhook's stop() or timeout has long closed its side
        return;
      }
      http::response<http::string_body> res{static_cast<http::status>(status), 11};
      res.body() = "{}";
      res.prepare_payload();
      http::write(s, res, ec);
    }
  }

  asio::io_context ioc_;
  tcp::acceptor acceptor_;
  std::function<int(int)> answer_;
  std::thread thread_;
  std::promise<void> release_, held_;
  bool held_set_ = false;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<http::request<http::string_body>> requests_;
};

struct outcome {
  std::string id;
  bool delivered = false;
  int attempts = 0;
  std::string why;
};

actors::transcript_event final_of(const std::string& text) {
  actors::transcript_event ev;
  ev.is_final = true;
  ev.text = text;
  ev.start_ms = 10;
  ev.end_ms = 900;
  ev.words.push_back({text, 10, 900, 0.9f});
  return ev;
}

call_start start_of(const std::string& tenant) {
  call_start s;
  s.source = "audiosocket";
  s.tenant = tenant;
  s.channel_labels = {"caller"};
  return s;
}

// A server that holds its answer to the first POST until release() (then answers 200, as it
// does every later one), and a webhook of `o` (url, 60 s timeout, no retries set here) whose
// first call is in flight there and whose next `queued` calls wait in its queue. ids: in order.
struct first_call_held {
  std::promise<void> got_first, released;
  std::shared_future<void> release_seen = released.get_future().share();
  capture_server server{[this](int n) {
    if (n == 0) {
      got_first.set_value();
      release_seen.wait();
    }
    return 200;
  }};
  call_registry reg;
  std::unique_ptr<webhook> hook;
  std::vector<std::string> ids;

  first_call_held(webhook::options o, int queued) {
    o.url = server.url();
    o.timeout = std::chrono::seconds(60);
    o.retries = 0;
    auto h = webhook::start(reg, o);
    REQUIRE(h.has_value());
    hook = std::move(*h);
    end_one();
    got_first.get_future().wait();  // the webhook waits on the server's answer to the first call
    for (int i = 0; i < queued; ++i) end_one();
  }
  ~first_call_held() {
    hook.reset();  // before the server goes
    if (!was_released) release();  // a failed check must not leave the server's thread waiting
  }
  void release() {
    was_released = true;
    released.set_value();
  }
  bool was_released = false;
  void end_one() {
    ids.push_back(reg.begin(start_of("acme")));
    reg.end(ids.back(), "hangup");
  }
};

}  // namespace

TEST_SUITE("calls webhook") {
  TEST_CASE("a failed POST is retried: the server answers 500 then 200 and gets the whole call twice") {
    capture_server server([](int n) { return n == 0 ? 500 : 200; });
    call_registry reg;
    std::promise<outcome> done;
    webhook::options o;
    o.url = server.url();
    o.timeout = std::chrono::seconds(30);
    o.retries = 3;
    o.backoff = std::chrono::milliseconds(1);
    o.on_done = [&](const std::string& id, bool ok, int attempts, const std::string& why) {
      done.set_value({id, ok, attempts, why});
    };
    auto hook = webhook::start(reg, o);
    REQUIRE(hook.has_value());
    const auto id = reg.begin(start_of("acme"));
    reg.result(id, 0, final_of("hello world"));
    reg.end(id, "hangup");
    const auto r = done.get_future().get();
    CHECK(r.id == id);
    CHECK(r.delivered);
    CHECK(r.attempts == 2);
    const auto reqs = server.requests();
    REQUIRE(reqs.size() == 2);
    CHECK(reqs[0].body() == reqs[1].body());
    CHECK(reqs[1].method() == http::verb::post);
    CHECK(std::string(reqs[1].target()) == "/hooks/calls");
    CHECK(std::string(reqs[1][http::field::content_type]) == "application/json");
    CHECK(std::string(reqs[1]["X-Sluice-Call"]) == id);
    const auto j = nlohmann::json::parse(reqs[1].body());
    CHECK(j["id"] == id);
    CHECK(j["end_reason"] == "hangup");
    CHECK(j["tenant"] == "acme");
    CHECK(j["channels"][0]["label"] == "caller");
    CHECK(j["channels"][0]["finals"][0]["text"] == "hello world");
    CHECK(j["channels"][0]["finals"][0]["words"][0]["start_ms"] == 10);
    const auto st = (*hook)->stats();
    CHECK(st.delivered == 1);
    CHECK(st.attempts == 2);
    CHECK(st.given_up == 0);
  }

  TEST_CASE("a server that never answers is timed out on every attempt and the call given up") {
    capture_server server([](int) { return 0; });
    call_registry reg;
    std::promise<outcome> done;
    webhook::options o;
    o.url = server.url();
    o.timeout = std::chrono::milliseconds(200);
    o.retries = 1;
    o.backoff = std::chrono::milliseconds(1);
    o.on_done = [&](const std::string& id, bool ok, int attempts, const std::string& why) {
      done.set_value({id, ok, attempts, why});
    };
    auto hook = webhook::start(reg, o);
    REQUIRE(hook.has_value());
    const auto id = reg.begin(start_of("acme"));
    reg.end(id, "hangup");
    const auto r = done.get_future().get();
    CHECK_FALSE(r.delivered);
    CHECK(r.attempts == 2);
    CHECK(r.why.find("no answer within 200 ms") != std::string::npos);
    CHECK((*hook)->stats().given_up == 1);
  }

  TEST_CASE("while the webhook waits on a server that never answers the ingest goes on, calls past its queue are counted") {
    capture_server server([](int) { return 0; });
    call_registry reg;
    webhook::options o;
    o.url = server.url();
    o.timeout = std::chrono::minutes(5);  // it waits on the first call for the whole test
    o.retries = 0;
    o.max_queued = 4;
    auto hook = webhook::start(reg, o);
    REQUIRE(hook.has_value());
    auto held = server.held();
    const auto first = reg.begin(start_of("acme"));
    reg.end(first, "hangup");
    held.wait();  // the webhook's thread is inside its POST of `first`, unanswered
    // The engine's side: 10 whole calls begun, transcribed and ended; none waits for the webhook.
    for (int i = 0; i < 10; ++i) {
      const auto id = reg.begin(start_of("acme"));
      reg.result(id, 0, final_of("call " + std::to_string(i)));
      reg.end(id, "hangup");
    }
    CHECK(reg.stats().ended == 11);
    // 4 wait in the webhook's queue; the other 6 found it full.
    CHECK((*hook)->stats().dropped == 6);
    CHECK((*hook)->stats().attempts == 1);
    (*hook)->stop();  // abandons the POST in flight, returns
    CHECK((*hook)->stats().delivered == 0);
  }

  TEST_CASE("webhook urls: http and https, host required, port checked, IPv6 in brackets") {
    auto u = parse_http_url("http://hooks.example:8080/a/b?x=1");
    REQUIRE(u.has_value());
    CHECK(u->host == "hooks.example");
    CHECK(u->port == "8080");
    CHECK(u->target == "/a/b?x=1");
    CHECK_FALSE(u->tls);
    auto d = parse_http_url("http://10.0.0.1");
    REQUIRE(d.has_value());
    CHECK(d->port == "80");
    CHECK(d->target == "/");
    auto s = parse_http_url("https://hooks.example/in");
    REQUIRE(s.has_value());
    CHECK(s->tls);
    CHECK(s->port == "443");
    CHECK(s->target == "/in");
    auto v6 = parse_http_url("https://[::1]:8443/x");
    REQUIRE(v6.has_value());
    CHECK(v6->host == "::1");
    CHECK(v6->port == "8443");
    auto v6d = parse_http_url("http://[fe80::1]");
    REQUIRE(v6d.has_value());
    CHECK(v6d->host == "fe80::1");
    CHECK(v6d->port == "80");
    CHECK_FALSE(parse_http_url("ftp://x/").has_value());
    CHECK_FALSE(parse_http_url("hooks.example/x").has_value());
    CHECK_FALSE(parse_http_url("http:///path").has_value());
    CHECK_FALSE(parse_http_url("https://:8443/path").has_value());
    CHECK_FALSE(parse_http_url("http://x:0/").has_value());
    CHECK_FALSE(parse_http_url("http://x:99999/").has_value());
    CHECK_FALSE(parse_http_url("http://x:8a/").has_value());
    CHECK_FALSE(parse_http_url("http://x:/").has_value());
    CHECK_FALSE(parse_http_url("http://[::1/").has_value());
    CHECK_FALSE(parse_http_url("http://[::1]x/").has_value());
    CHECK_FALSE(parse_http_url("https://user:pw@hooks.example/").has_value());
  }

  TEST_CASE("stop with a drain posts the call in flight and the calls still queued, in order") {
    std::promise<void> draining;
    webhook::options o;
    o.on_drain = [&] { draining.set_value(); };
    first_call_held f(o, 2);
    std::thread stopper([&] { f.hook->stop(std::chrono::seconds(60)); });
    draining.get_future().wait();  // stop() has begun and is draining
    f.release();                   // the server answers; the queued calls follow
    stopper.join();
    const auto st = f.hook->stats();
    CHECK(st.delivered == 3);
    CHECK(st.abandoned == 0);
    const auto reqs = f.server.requests();
    REQUIRE(reqs.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) CHECK(std::string(reqs[i]["X-Sluice-Call"]) == f.ids[i]);
  }

  TEST_CASE("stop without a drain abandons the call in flight and the queued ones, and counts them") {
    webhook::options o;
    bool drained_called = false;
    o.on_drain = [&] { drained_called = true; };
    first_call_held f(o, 2);
    f.hook->stop();  // drain 0: returns without waiting for the server
    f.release();
    const auto st = f.hook->stats();
    CHECK(st.delivered == 0);
    CHECK(st.abandoned == 3);
    CHECK_FALSE(drained_called);
    CHECK(f.server.requests().size() == 1);
    f.hook->stop(std::chrono::seconds(5));  // a second stop does nothing
    CHECK(f.hook->stats().abandoned == 3);
  }

  TEST_CASE("a drain that runs out abandons what is left: a server that never answers holds stop() for the drain only") {
    capture_server server([](int) { return 0; });
    call_registry reg;
    webhook::options o;
    o.url = server.url();
    o.timeout = std::chrono::minutes(5);
    o.retries = 0;
    auto hook = webhook::start(reg, o);
    REQUIRE(hook.has_value());
    auto held = server.held();
    const auto first = reg.begin(start_of("acme"));
    reg.end(first, "hangup");
    held.wait();
    const auto second = reg.begin(start_of("acme"));
    reg.end(second, "hangup");
    const auto t0 = std::chrono::steady_clock::now();
    (*hook)->stop(std::chrono::milliseconds(300));
    const auto took = std::chrono::steady_clock::now() - t0;
    CHECK(took >= std::chrono::milliseconds(300));
    CHECK(took < std::chrono::minutes(5));  // not the attempt's own time limit
    const auto st = (*hook)->stats();
    CHECK(st.delivered == 0);
    CHECK(st.abandoned == 2);
  }
}
