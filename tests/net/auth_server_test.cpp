// sluice serve with API keys, over loopback: every route and the WebSocket upgrade refuse a
// missing or wrong key (401) and a key without the scope (403) before anything runs; the right
// key streams exactly what an unauthenticated loopback server gives; a tenant sees only its own
// streams in /v1/actors; transcript text stays out of /metrics and info logs; /metrics can be
// opened for Prometheus; a public address without keys refuses to start; an address that
// presents invalid keys too often is locked out (429) while others are served.
#include "tests/net/auth_test_util.hpp"

#include <chrono>
#include <regex>
#include <sstream>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "net/auth/key_store.hpp"
#include "tests/common/audio_tools.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

const std::string start_8k = R"({"type":"start","sample_rate":8000,"encoding":"pcm_s16le","channels":1})";
const std::string end_msg = R"({"type":"end"})";

config::sluice_config with_keys(const keyring& ring, bool metrics_open = false) {
  config::sluice_config cfg;
  cfg.auth.keys_file = ring.path;
  cfg.auth.metrics_open = metrics_open;
  return cfg;
}

// The channel entries of a /v1/actors body: tenant -> latest text.
std::map<std::string, std::string> channel_texts(const std::string& body) {
  std::map<std::string, std::string> out;
  const auto j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return out;
  for (const auto& a : j["actors"])
    if (a.value("kind", "") == "channel") out[a.value("tenant", "")] = a.value("text", "");
  return out;
}

// Every log line at info and above, while it lives.
struct log_capture {
  std::ostringstream lines;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  log_capture() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(lines);
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
  }
  ~log_capture() { spdlog::set_default_logger(previous); }
};

}  // namespace

TEST_SUITE("auth server") {
  TEST_CASE("with keys: no key or a wrong key gets 401 and a key without the scope 403 on every route and before the upgrade") {
    keyring ring;
    const auto streamer = ring.add("acme", "stream");
    const auto reader = ring.add("acme", "read");
    served s(with_keys(ring));
    const auto wrong = "sk_0000000000000000_" + std::string(64, '0');

    for (const char* path : {"/v1/stream", "/funasr", "/"}) {
      stepped_stream none(s.port);
      CHECK_MESSAGE(none.open(path, {}) == 401, path);
      CHECK(std::string(none.refusal[http::field::www_authenticate]) == "Bearer realm=\"sluice\"");
      stepped_stream bad(s.port);
      CHECK_MESSAGE(bad.open(path, bearer(wrong)) == 401, path);
      CHECK(std::string(bad.refusal[http::field::www_authenticate]).find("invalid_token") != std::string::npos);
      stepped_stream lacks(s.port);
      CHECK_MESSAGE(lacks.open(path, bearer(reader)) == 403, path);
      CHECK(std::string(lacks.refusal[http::field::www_authenticate]).find("insufficient_scope") != std::string::npos);
    }
    for (const char* path : {"/", "/v1/actors", "/metrics", "/index.html", "/no/such/route"}) {
      const auto none = request_with(s.port, http::verb::get, path, {});
      CHECK_MESSAGE(none.status == 401, path);
      CHECK(none.www_authenticate == "Bearer realm=\"sluice\"");
      CHECK(json::parse(none.body)["error"].get<std::string>().find("API key") != std::string::npos);
      CHECK_MESSAGE(request_with(s.port, http::verb::get, path, bearer(wrong)).status == 401, path);
    }
    CHECK(request_with(s.port, http::verb::post, "/v1/transcribe", {}, "RIFF....").status == 401);
    CHECK(request_with(s.port, http::verb::post, "/v1/transcribe", bearer(reader), "RIFF....").status == 403);
    CHECK(request_with(s.port, http::verb::get, "/v1/actors", bearer(streamer)).status == 403);
    CHECK(request_with(s.port, http::verb::get, "/metrics", bearer(reader)).status == 403);
    // What the right keys get.
    CHECK(request_with(s.port, http::verb::get, "/v1/actors", bearer(reader)).status == 200);
    CHECK(request_with(s.port, http::verb::get, "/", {{"X-API-Key", reader}}).status == 200);
    CHECK(request_with(s.port, http::verb::get, "/?token=" + reader, {}).status == 200);
    CHECK(request_with(s.port, http::verb::get, "/v1/actors?token=" + reader, {}).status == 401);
    CHECK(request_with(s.port, http::verb::get, "/healthz", {}).status == 200);
    CHECK(request_with(s.port, http::verb::get, "/readyz", {}).status == 200);
    // The refused upgrades opened no channel: the first stream admitted gets the engine's
    // first channel id (the supervisor counts from 1).
    stepped_stream ok(s.port);
    REQUIRE(ok.open("/v1/stream?token=" + streamer, {}) == 101);
    ok.send_text(start_8k);
    ok.send_text(end_msg);
    CHECK(ok.read_to_close() == 1000);
    REQUIRE(!ok.messages().empty());
    CHECK(ok.messages().front()["type"] == "ready");
    CHECK(ok.messages().front()["channel"] == 1);
  }

  TEST_CASE("a refused upload is answered on its header: the server does not wait for (or read) the body") {
    keyring ring;
    const auto reader = ring.add("acme", "read");
    served s(with_keys(ring));
    for (const auto& hs : {headers{}, bearer(reader)}) {
      // The header announces 8 MB and none of it is sent: the answer must come anyway. A server
      // that read the body first would wait for it until server.idle_timeout_s (30 s) and then
      // close without an answer (checked: the read below then fails with "end of stream").
      asio::io_context ioc;
      beast::tcp_stream stream(ioc);
      stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.port));
      http::request<http::empty_body> req{http::verb::post, "/v1/transcribe", 11};
      req.set(http::field::host, "127.0.0.1");
      req.set(http::field::content_length, std::to_string(8 << 20));
      for (const auto& [k, v] : hs) req.set(k, v);
      http::request_serializer<http::empty_body> sr{req};
      http::write_header(stream, sr);
      beast::flat_buffer buf;
      http::response<http::string_body> res;
      beast::error_code ec;
      http::read(stream, buf, res, ec);
      REQUIRE_MESSAGE(!ec, "no answer before the body: " << ec.message());
      CHECK(res.result_int() == (hs.empty() ? 401 : 403));
      CHECK_FALSE(res.keep_alive());
    }
  }

  TEST_CASE("the right key streams beside refused clients exactly the finals of an unauthenticated loopback server (the default)") {
    const auto frames = call_pcm16_frames(0);
    std::vector<std::string> reference;
    {
      served open_server;  // 127.0.0.1, no keys: served without credentials, as before auth existed
      CHECK(request_with(open_server.port, http::verb::get, "/v1/actors", {}).status == 200);
      CHECK(request_with(open_server.port, http::verb::get, "/metrics", {}).status == 200);
      CHECK(request_with(open_server.port, http::verb::get, "/", {}).status == 200);
      stepped_stream ref(open_server.port);
      REQUIRE(ref.open("/v1/stream", {}) == 101);
      ref.send_text(start_8k);
      for (const auto& f : frames) ref.send_binary(f);
      ref.send_text(end_msg);
      CHECK(ref.read_to_close() == 1000);
      reference = ref.finals();
    }
    REQUIRE(reference.size() >= 2);

    keyring ring;
    const auto key = ring.add("acme", "stream");
    const auto reader = ring.add("acme", "read");
    served s(with_keys(ring));
    stepped_stream st(s.port);
    REQUIRE(st.open("/v1/stream", bearer(key)) == 101);
    st.send_text(start_8k);
    // Refused clients come and go while it streams: they change nothing for it.
    int refused = 0;
    for (std::size_t i = 0; i < frames.size(); ++i) {
      st.send_binary(frames[i]);
      if (i % 50 != 0) continue;
      stepped_stream none(s.port), lacks(s.port);
      refused += none.open("/v1/stream", {}) == 401;
      refused += lacks.open("/funasr", bearer(reader)) == 403;
    }
    st.send_text(end_msg);
    CHECK(st.read_to_close() == 1000);
    CHECK(refused == 2 * static_cast<int>((frames.size() + 49) / 50));
    CHECK(st.finals() == reference);
  }

  TEST_CASE("tenants see only their own streams in /v1/actors - admin sees all - no text in /metrics or info logs") {
    keyring ring;
    const auto acme = ring.add("acme", "stream,read");
    const auto globex = ring.add("globex", "stream,read");
    const auto admin = ring.add("ops", "admin");
    const auto scraper = ring.add("ops", "metrics");
    log_capture logs;
    served s(with_keys(ring));

    // Two live calls, one per tenant, different audio (the call's two sides).
    stepped_stream a(s.port), b(s.port);
    REQUIRE(a.open("/v1/stream", bearer(acme)) == 101);
    REQUIRE(b.open("/v1/stream", bearer(globex)) == 101);
    a.send_text(start_8k);
    b.send_text(start_8k);
    for (const auto& f : call_pcm16_frames(0)) a.send_binary(f);
    for (const auto& f : call_pcm16_frames(1)) b.send_binary(f);
    REQUIRE(a.read_until_final_with_text());
    REQUIRE(b.read_until_final_with_text());

    // Both channels report their text to the metrics actor every engine.report_ms: poll the
    // admin view until both are there (the condition is checked; the pause only paces the poll).
    std::map<std::string, std::string> all;
    poll_until([&] {
      all = channel_texts(request_with(s.port, http::verb::get, "/v1/actors", bearer(admin)).body);
      return !all["acme"].empty() && !all["globex"].empty();
    });
    REQUIRE_MESSAGE(!all["acme"].empty(), "acme's channel never showed text to admin");
    REQUIRE(!all["globex"].empty());
    REQUIRE(all["acme"] != all["globex"]);

    const auto acme_body = request_with(s.port, http::verb::get, "/v1/actors", bearer(acme)).body;
    const auto globex_body = request_with(s.port, http::verb::get, "/v1/actors", bearer(globex)).body;
    const auto acme_view = channel_texts(acme_body), globex_view = channel_texts(globex_body);
    CHECK(acme_view.size() == 1);
    CHECK(acme_view.count("acme") == 1);
    CHECK(globex_view.size() == 1);
    CHECK(globex_view.count("globex") == 1);
    CHECK(acme_body.find(all["globex"]) == std::string::npos);
    CHECK(globex_body.find(all["acme"]) == std::string::npos);
    CHECK(json::parse(acme_body)["actors"].size() > 1);  // the engine's own actors stay visible

    // Totals: each tenant its own (both calls are live: two channels engine-wide, one each), in
    // the same document as its channel, so its audio is exactly its channel's.
    for (const auto* body : {&acme_body, &globex_body}) {
      const auto j = json::parse(*body);
      CHECK(j["view"] == "tenant");
      CHECK(j["summary"]["channels_live"] == 1);
      CHECK_FALSE(j["summary"].contains("batches"));
      double channel_ms = -1;
      for (const auto& a : j["actors"])
        if (a["kind"] == "channel") channel_ms = a["counters"].value("audio_ms", 0.0);
      CHECK(channel_ms > 0);
      CHECK(j["summary"]["audio_s"].get<double>() == doctest::Approx(channel_ms / 1000.0));
      for (const auto& a : j["actors"])
        if (a["kind"] != "channel") CHECK_FALSE(a.contains("counters"));
    }
    const auto engine_body = json::parse(request_with(s.port, http::verb::get, "/v1/actors", bearer(admin)).body);
    CHECK(engine_body["summary"]["channels_live"] == 2);
    CHECK(engine_body["tenants"]["acme"]["live"] == 1);
    CHECK(engine_body["tenants"]["globex"]["live"] == 1);

    a.send_text(end_msg);
    b.send_text(end_msg);
    CHECK(a.read_to_close() == 1000);
    CHECK(b.read_to_close() == 1000);
    std::vector<std::string> texts = {all["acme"], all["globex"]};
    for (const auto* st : {&a, &b})
      for (const auto& t : st->finals())
        if (!t.empty()) texts.push_back(t);
    const auto metrics = request_with(s.port, http::verb::get, "/metrics", bearer(scraper));
    REQUIRE(metrics.status == 200);
    CHECK(metrics.body.find("sluice_up 1") != std::string::npos);
    // Each tenant's own series, by its label.
    for (const char* t : {"acme", "globex"}) {
      CHECK(metrics.body.find("sluice_tenant_audio_ms_total{tenant=\"" + std::string(t) + "\"} ") != std::string::npos);
      CHECK(metrics.body.find("sluice_tenant_final_latency_milliseconds_count{tenant=\"" + std::string(t) + "\"} ") !=
            std::string::npos);
    }
    const std::string logged = logs.lines.str();
    REQUIRE_MESSAGE(logged.find("auth: 4 API keys") != std::string::npos, "the log capture saw nothing: " << logged);
    for (const auto& t : texts) {
      CHECK_MESSAGE(metrics.body.find(t) == std::string::npos, "/metrics carries transcript text: " << t);
      CHECK_MESSAGE(logged.find(t) == std::string::npos, "an info log carries transcript text: " << t);
    }
  }

  TEST_CASE("the dashboard opened as /?token=<key> polls /v1/actors with the key and lists the tenant's stream") {
    keyring ring;
    const auto acme = ring.add("acme", "stream,read");
    const auto admin = ring.add("ops", "admin");
    served s(with_keys(ring));
    stepped_stream a(s.port);
    REQUIRE(a.open("/v1/stream", bearer(acme)) == 101);
    a.send_text(start_8k);
    for (const auto& f : call_pcm16_frames(0)) a.send_binary(f);
    REQUIRE(a.read_until_final_with_text());
    // The channel reports its text every engine.report_ms: poll the admin view until it has
    // (the condition is checked; the pause only paces the poll).
    poll_until([&] {
      return !channel_texts(request_with(s.port, http::verb::get, "/v1/actors", bearer(admin)).body)["acme"].empty();
    });
    auto page = [&](const std::string& query) {
      return capture_stdout(
          "timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-background-networking "
          "--disable-component-update --disable-default-apps --disable-sync --disable-extensions --no-first-run "
          "--virtual-time-budget=3000 --dump-dom 'http://127.0.0.1:" + std::to_string(s.port) + "/" + query +
          "' 2>/dev/null");
    };
    const auto dom = page("?token=" + acme);
    REQUIRE_MESSAGE(dom.find("<html") != std::string::npos, "chromium printed no page");
    CHECK(dom.find("id=\"status\">live<") != std::string::npos);
    CHECK(dom.find("<td>lane/0</td>") != std::string::npos);  // the engine's own actors: lanes by default
    CHECK(dom.find("tenant acme: its own streams and totals") != std::string::npos);
    // The streams table: channel/1 with the display text the client itself received (the channel goes on
    // decoding while the page loads, so any of its partial or final texts).
    std::smatch m;
    REQUIRE(std::regex_search(dom, m, std::regex(R"(<td>channel/1</td>.*?<td style="text-align:left">([^<]*)</td>)")));
    const std::string shown = m[1];
    CHECK(!shown.empty());
    // Without the token the page itself is refused.
    CHECK(page("").find("id=\"status\">live<") == std::string::npos);
    a.send_text(end_msg);
    CHECK(a.read_to_close() == 1000);
    bool received = false;
    // The dashboard shows the display form (post-processed) of the newest partial or final.
    for (const auto& msg : a.messages()) received = received || msg.value("display_text", "") == shown;
    CHECK_MESSAGE(received, "the page shows text the stream never got: " << shown);
  }

  TEST_CASE("auth.metrics_open: /metrics without a key for Prometheus while every other route still needs one") {
    keyring ring;
    ring.add("acme", "read");
    served s(with_keys(ring, true));
    const auto m = request_with(s.port, http::verb::get, "/metrics", {});
    CHECK(m.status == 200);
    CHECK(m.body.find("sluice_up 1") != std::string::npos);
    CHECK(request_with(s.port, http::verb::get, "/v1/actors", {}).status == 401);
    CHECK(request_with(s.port, http::verb::get, "/", {}).status == 401);
    stepped_stream ws(s.port);
    CHECK(ws.open("/v1/stream", {}) == 401);
  }

  TEST_CASE("a non-loopback address without keys refuses to start - allow_insecure_public or keys let it") {
    served s;
    config::sluice_config cfg;
    cfg.server.host = "0.0.0.0";
    cfg.server.port = 0;
    auto refused = net::server::start(*s.engine, cfg.server, cfg.auth);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code == errc::invalid_config);
    CHECK(refused.error().message.find("not a loopback address") != std::string::npos);
    CHECK(refused.error().message.find("allow_insecure_public") != std::string::npos);
    CHECK(request_with(s.port, http::verb::get, "/healthz", {}).status == 200);  // the first server is untouched

    cfg.auth.allow_insecure_public = true;
    served insecure(cfg);
    CHECK(request_with(insecure.port, http::verb::get, "/v1/actors", {}).status == 200);

    keyring ring;
    const auto key = ring.add("acme", "read");
    auto keyed = with_keys(ring);
    keyed.server.host = "0.0.0.0";
    served guarded(keyed);
    CHECK(request_with(guarded.port, http::verb::get, "/v1/actors", {}).status == 401);
    CHECK(request_with(guarded.port, http::verb::get, "/v1/actors", bearer(key)).status == 200);
  }
}

namespace {

// A reply's status, its Retry-After header and its body.
struct limited_reply {
  int status = 0;
  std::string retry_after;
  std::string body;
};

// A TCP connection to the server's loopback port from the loopback address `from` (127.0.0.x:
// Linux routes all of 127/8 to lo), so that the server sees that client address.
tcp::socket connect_from(asio::io_context& ioc, const std::string& from, uint16_t port) {
  tcp::socket sock(ioc);
  sock.open(tcp::v4());
  sock.bind(tcp::endpoint(asio::ip::make_address(from), 0));
  sock.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  return sock;
}

limited_reply get_from(const std::string& from, uint16_t port, const std::string& target, const headers& hs) {
  asio::io_context ioc;
  beast::tcp_stream stream(connect_from(ioc, from, port));
  http::request<http::string_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [k, v] : hs) req.set(k, v);
  http::write(stream, req);
  beast::flat_buffer buf;
  http::response<http::string_body> res;
  http::read(stream, buf, res);
  return {static_cast<int>(res.result_int()), std::string(res[http::field::retry_after]), res.body()};
}

// The HTTP status of a WebSocket upgrade to /v1/stream from `from` (101 when upgraded).
limited_reply upgrade_from(const std::string& from, uint16_t port, const headers& hs) {
  asio::io_context ioc;
  websocket::stream<tcp::socket> ws(connect_from(ioc, from, port));
  ws.set_option(websocket::stream_base::decorator([hs](websocket::request_type& req) {
    for (const auto& [k, v] : hs) req.set(k, v);
  }));
  websocket::response_type res;
  beast::error_code ec;
  ws.handshake(res, "127.0.0.1", "/v1/stream", ec);
  return {static_cast<int>(res.result_int()), std::string(res[http::field::retry_after])};
}

// The back-off of the test below: 3 invalid keys within a minute lock an address out for 2 s.
constexpr int limit_failures = 3;
constexpr int limit_lockout_s = 2;

}  // namespace

TEST_SUITE("auth server") {
  TEST_CASE("failed-auth back-off: after auth.max_failures invalid keys an address gets 429 with Retry-After on HTTP and before the upgrade - other addresses and missing keys are not affected") {
    const auto frames = call_pcm16_frames(0);
    keyring ring;
    const auto key = ring.add("acme", "stream,read");
    auto cfg = with_keys(ring);
    cfg.auth.max_failures = limit_failures;
    cfg.auth.failure_window_s = 60;
    cfg.auth.lockout_s = limit_lockout_s;
    served s(cfg);
    const headers good = bearer(key), wrong = bearer("sk_not_a_key_0123456789");
    const std::string guesser = "127.0.0.2", other = "127.0.0.3", keyless = "127.0.0.4";

    // An honest stream from 127.0.0.1 runs through the whole attack.
    stepped_stream honest(s.port);
    REQUIRE(honest.open("/v1/stream", good) == 101);
    honest.send_text(start_8k);
    for (std::size_t i = 0; i < frames.size() / 2; ++i) honest.send_binary(frames[i]);

    // A missing key is not a failed authentication: no lockout however often.
    for (int i = 0; i < 3 * limit_failures; ++i) CHECK(get_from(keyless, s.port, "/v1/actors", {}).status == 401);
    CHECK(get_from(keyless, s.port, "/v1/actors", good).status == 200);

    // The guesser: max_failures - 1 wrong keys leave it served; the next one locks it out.
    for (int i = 0; i < limit_failures - 1; ++i) CHECK(get_from(guesser, s.port, "/v1/actors", wrong).status == 401);
    CHECK(get_from(guesser, s.port, "/v1/actors", good).status == 200);
    CHECK(get_from(guesser, s.port, "/v1/actors", wrong).status == 401);
    // Locked out: even the right key gets 429, on HTTP and on a WebSocket upgrade.
    const auto locked = get_from(guesser, s.port, "/v1/actors", good);
    CHECK(locked.status == 429);
    REQUIRE_FALSE(locked.retry_after.empty());
    const int retry = std::stoi(locked.retry_after);
    CHECK(retry >= 1);
    CHECK(retry <= limit_lockout_s);
    CHECK(json::parse(locked.body, nullptr, false).value("error", "") ==
          "too many invalid API keys from this address (auth.max_failures = " + std::to_string(limit_failures) +
              " within 60 s): retry in " + locked.retry_after + " s");
    const auto ws_locked = upgrade_from(guesser, s.port, good);
    CHECK(ws_locked.status == 429);
    CHECK_FALSE(ws_locked.retry_after.empty());
    // Another address is not affected, with the same key.
    CHECK(get_from(other, s.port, "/v1/actors", good).status == 200);
    CHECK(upgrade_from(other, s.port, good).status == 101);

    // After the lockout the guesser's right key is served again (bounded wait on the condition).
    CHECK(poll_until([&] { return get_from(guesser, s.port, "/v1/actors", good).status == 200; },
                     std::chrono::seconds(limit_lockout_s + 5)));

    for (std::size_t i = frames.size() / 2; i < frames.size(); ++i) honest.send_binary(frames[i]);
    honest.send_text(end_msg);
    CHECK(honest.read_to_close() == 1000);
    // What the same call gets alone, on a server without keys.
    std::vector<std::string> reference;
    {
      served open_server;
      stepped_stream ref(open_server.port);
      REQUIRE(ref.open("/v1/stream", {}) == 101);
      ref.send_text(start_8k);
      for (const auto& f : frames) ref.send_binary(f);
      ref.send_text(end_msg);
      CHECK(ref.read_to_close() == 1000);
      reference = ref.finals();
    }
    REQUIRE(reference.size() >= 2);
    CHECK(honest.finals() == reference);
  }
}
