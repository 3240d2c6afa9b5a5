// sluice serve end to end over loopback: a WebSocket client streams a real call channel and
// gets finals with sane word times; a FunASR-protocol client likewise; HTTP transcribe, health,
// the actors snapshot, /metrics (parsed, counters move), the dashboard page; and every kind of
// hostile input gets its own clear error while a good stream alongside is untouched.
#include "tests/net/net_test_util.hpp"

#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <regex>
#include <thread>

#include "dsp/g711.hpp"
#include "net/http_session.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

const std::string start_8k = R"({"type":"start","sample_rate":8000,"encoding":"pcm_s16le","channels":1})";
const std::string end_msg = R"({"type":"end"})";

std::vector<std::string> finals_of(const ws_result& r) {
  std::vector<std::string> out;
  for (const auto& m : r.messages)
    if (m.value("type", "") == "final") out.push_back(m["text"]);
  return out;
}

// Checks Prometheus text exposition format 0.0.4 line by line; returns the samples.
std::map<std::string, double> parse_prometheus(const std::string& text) {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
  const std::regex sample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*)\})? (-?[0-9.eE+-]+|\+Inf|NaN)$)");
  const std::regex type(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)");
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (std::regex_match(line, m, type)) {
      CHECK_MESSAGE(types.count(m[1]) == 0, "TYPE twice for " << m[1]);
      types[m[1]] = m[2];
      continue;
    }
    REQUIRE_MESSAGE(std::regex_match(line, m, sample), "line " << n << " is not a sample: " << line);
    std::string family = m[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (!types.count(family) && family.size() > strlen(suffix) &&
          family.compare(family.size() - strlen(suffix), strlen(suffix), suffix) == 0)
        family.resize(family.size() - strlen(suffix));
    CHECK_MESSAGE(types.count(family) == 1, "sample before its TYPE: " << line);
    samples[std::string(m[1]) + std::string(m[2])] = std::stod(m[7].str() == "+Inf" ? "inf" : m[7].str());
  }
  return samples;
}

// Per channel: its segments' times and texts (confidences may differ in the last float bits
// with how the engine happened to batch).
std::vector<std::string> texts_of(const json& channels) {
  std::vector<std::string> out;
  for (const auto& c : channels) {
    std::string t;
    for (const auto& s : c["segments"])
      t += std::to_string(s["start_ms"].get<int64_t>()) + "-" + std::to_string(s["end_ms"].get<int64_t>()) + " " +
           s["text"].get<std::string>() + "\n";
    out.push_back(t);
  }
  return out;
}

}  // namespace

TEST_SUITE("server") {
  TEST_CASE("WebSocket /v1/stream: a call channel streamed as PCM16 gets partials, finals with word times, then end") {
    served s;
    const auto frames = call_pcm16_frames();
    auto r = ws_session(s.port, "/v1/stream", {start_8k}, frames, {end_msg});
    CHECK(r.close_code == 1000);
    REQUIRE(r.messages.size() >= 3);
    CHECK(r.messages.front()["type"] == "ready");
    CHECK(r.messages.back()["type"] == "end");
    const auto finals = finals_of(r);
    REQUIRE(finals.size() >= 2);
    int partials = 0, with_text = 0;
    for (const auto& m : r.messages) {
      if (m["type"] == "partial") ++partials;
      if (m["type"] != "final") continue;
      with_text += !m["text"].get<std::string>().empty();
      for (const auto& w : m["words"]) {
        CHECK(w["start_ms"].get<int64_t>() >= m["start_ms"].get<int64_t>());
        CHECK(w["end_ms"].get<int64_t>() > w["start_ms"].get<int64_t>());
        CHECK(w["end_ms"].get<int64_t>() <= 28000);  // inside the 27.5 s call
      }
    }
    CHECK(partials >= 2);
    CHECK(with_text >= 2);

    // The same bytes straight into an engine channel give the same finals.
    caf::scoped_actor self{s.engine->system()};
    actors::channel_request req;
    req.sample_rate = 8000;
    req.codec = "pcm_s16le";
    auto ch = s.engine->open(req, caf::actor_cast<caf::actor>(self));
    REQUIRE(ch.ok);
    for (const auto& f : frames) self->send(ch.handle, actors::audio_atom::value, f);
    self->send(ch.handle, actors::end_atom::value);
    std::vector<actors::transcript_event> direct;
    bool drained = false;
    while (!drained)
      self->receive([&](actors::transcript_event& ev) { if (ev.is_final) direct.push_back(ev); },
                    [&](actors::drained_atom, actors::channel_id) { drained = true; },
                    caf::after(std::chrono::seconds(60)) >> [&] { drained = true; FAIL("no drain"); });
    std::sort(direct.begin(), direct.end(), [](auto& a, auto& b) { return a.utterance < b.utterance; });
    std::vector<std::string> want;
    for (const auto& ev : direct) want.push_back(ev.text);
    auto join = [](const std::vector<std::string>& v) {
      std::string o;
      for (const auto& t : v) o += "[" + t + "] ";
      return o;
    };
    CHECK_MESSAGE(finals == want, "served: " << join(finals) << "\ndirect: " << join(want));
  }

  TEST_CASE("FunASR protocol on /funasr: 2pass online deltas, offline sentences with timestamps, is_final last") {
    served s;
    const auto frames = call_pcm16_frames();
    auto r = ws_session(s.port, "/funasr",
                        {R"({"mode":"2pass","wav_name":"call","wav_format":"pcm","is_speaking":true,"chunk_size":[5,10,5],"audio_fs":8000,"hotwords":"{\"refund\":20}","itn":true})"},
                        frames, {R"({"is_speaking": false})"});
    CHECK(r.close_code == 1000);
    REQUIRE(r.messages.size() >= 3);
    int online = 0, offline = 0;
    for (std::size_t i = 0; i < r.messages.size(); ++i) {
      const auto& m = r.messages[i];
      CHECK(m["wav_name"] == "call");
      CHECK(m["is_final"].get<bool>() == (i + 1 == r.messages.size()));
      if (m["mode"] == "2pass-online") ++online;
      if (m["mode"] == "2pass-offline" && !m["is_final"].get<bool>()) {
        ++offline;
        CHECK(m["timestamp"].is_string());
        REQUIRE(m["stamp_sents"].size() == 1);
        // Sentences after the first start with a space (FunASR's clients append them).
        CHECK((offline == 1 ? "" : " ") + m["stamp_sents"][0]["text_seg"].get<std::string>() == m["text"]);
        CHECK(m["stamp_sents"][0]["end"].get<int64_t>() >= m["stamp_sents"][0]["start"].get<int64_t>());
      }
    }
    CHECK(online >= 2);
    CHECK(offline >= 2);
    // FunASR's own clients connect to the root path: the same protocol there.
    auto root = ws_session(s.port, "/", {R"({"mode":"offline","wav_name":"w","audio_fs":8000,"is_speaking":true})"},
                           frames, {R"({"is_speaking": false})"});
    CHECK(root.close_code == 1000);
    REQUIRE(root.messages.size() >= 2);
    for (const auto& m : root.messages) CHECK(m["mode"] == "offline");
    CHECK(root.messages.back()["is_final"] == true);
  }

  TEST_CASE("HTTP: health, readiness, actors snapshot, dashboard, transcribe upload, and /metrics that parse, list every latency histogram from the first scrape and move") {
    served s;
    auto h = http_request(s.port, http::verb::get, "/healthz");
    CHECK(h.status == 200);
    CHECK(http_request(s.port, http::verb::get, "/readyz").status == 200);
    auto page = http_request(s.port, http::verb::get, "/");
    CHECK(page.status == 200);
    CHECK(page.content_type.find("text/html") == 0);
    CHECK(page.body == net::dashboard_html());
    CHECK(page.body.find("/v1/actors") != std::string::npos);
    const auto m0 = parse_prometheus(http_request(s.port, http::verb::get, "/metrics").body);
    CHECK(m0.at("sluice_up") == 1);
    // Before any stream: every latency histogram is there with zero counts, in buckets that
    // tell a 20 ms wait from a 25, 30, 40 or 50 ms one.
    for (const char* h : {"sluice_channel_partial_latency_milliseconds", "sluice_channel_final_latency_milliseconds",
                          "sluice_batcher_queue_wait_milliseconds", "sluice_batcher_step_milliseconds"}) {
      CAPTURE(h);
      const std::string n = h;
      REQUIRE(m0.count(n + "_count") == 1);
      CHECK(m0.at(n + "_count") == 0);
      CHECK(m0.at(n + "_sum") == 0);
      for (const char* le : {"20", "25", "30", "40", "50", "+Inf"}) {
        CAPTURE(le);
        REQUIRE(m0.count(n + "_bucket{le=\"" + le + "\"}") == 1);
        CHECK(m0.at(n + "_bucket{le=\"" + le + "\"}") == 0);
      }
    }

    const std::string wav = call_wav_bytes();
    auto t = http_request(s.port, http::verb::post, "/v1/transcribe", wav);
    REQUIRE(t.status == 200);
    auto j = json::parse(t.body);
    REQUIRE(j["channels"].size() == 2);
    CHECK(j["channels"][0]["label"] == "agent");
    CHECK(j["channels"][1]["label"] == "customer");
    CHECK(j["channels"][0]["segments"].size() >= 1);
    CHECK(j["channels"][1]["segments"].size() >= 1);
    CHECK_FALSE(j["channels"][1]["segments"][0]["text"].get<std::string>().empty());

    // The same call as a multipart form upload, and channel 0 as a headerless mu-law body.
    const std::string boundary = "sluiceBoundary7";
    const std::string form = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.wav\"\r\n"
                             "Content-Type: audio/wav\r\n\r\n" + wav + "\r\n--" + boundary + "--\r\n";
    {
      asio::io_context ioc;
      beast::tcp_stream stream(ioc);
      stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.port));
      http::request<http::string_body> req{http::verb::post, "/v1/transcribe", 11};
      req.set(http::field::host, "127.0.0.1");
      req.set(http::field::content_type, "multipart/form-data; boundary=" + boundary);
      req.body() = form;
      req.prepare_payload();
      http::write(stream, req);
      beast::flat_buffer buf;
      http::response<http::string_body> res;
      http::read(stream, buf, res);
      REQUIRE(res.result_int() == 200);
      CHECK(texts_of(json::parse(res.body())["channels"]) == texts_of(j["channels"]));
    }
    auto decoded = dsp::decode_audio_file(SLUICE_TEST_DATA_DIR "/sample_call_8k_mulaw_stereo.wav");
    REQUIRE(decoded.has_value());
    std::string ulaw;
    for (float v : decoded->channels[0]) ulaw.push_back(static_cast<char>(dsp::linear_to_mulaw(static_cast<int16_t>(std::lround(v * 32767.0f)))));
    auto raw = http_request(s.port, http::verb::post, "/v1/transcribe?sample_rate=8000&encoding=mulaw", ulaw);
    REQUIRE(raw.status == 200);
    auto jr = json::parse(raw.body);
    REQUIRE(jr["channels"].size() == 1);
    CHECK(texts_of(jr["channels"]).at(0) == texts_of(j["channels"]).at(0));
    CHECK(http_request(s.port, http::verb::post, "/v1/transcribe?sample_rate=8000&encoding=mp3", ulaw).status == 400);

    // The uploads above are offline work: their finals are counted, their "latency" is not (final
    // latency is a live figure). One live stream of channel 0: its finals are the histogram's.
    auto live = ws_session(s.port, "/v1/stream", {start_8k}, call_pcm16_frames(), {end_msg});
    int live_finals = 0;
    for (const auto& m : live.messages) live_finals += m.value("type", "") == "final";
    REQUIRE(live_finals >= 2);
    // The channels report every engine.report_ms: wait until the live stream's report is in (a
    // count that took the uploads' finals too would pass live_finals and never equal it).
    std::map<std::string, double> m1;
    const auto live_reported = [&] {
      m1 = parse_prometheus(http_request(s.port, http::verb::get, "/metrics").body);
      return m1.count("sluice_channel_final_latency_milliseconds_count") == 1 &&
             m1.at("sluice_channel_final_latency_milliseconds_count") == live_finals;
    };
    CHECK(poll_until(live_reported));
    CHECK(m1.at("sluice_channel_finals_total") >= 2 * 2 + 1 + live_finals);  // uploads: 2 + 2 channels + 1, a final each at least
    CHECK(m1.at("sluice_batcher_batches_total") > 0);
    CHECK(m1.at("sluice_channel_final_latency_milliseconds_bucket{le=\"+Inf\"}") ==
          m1.at("sluice_channel_final_latency_milliseconds_count"));
    // The default engine runs lanes (a lane per core): each reports as kind batcher, and the
    // pairs it ran per (layer, expert), the load heatmap's figures.
    CHECK(m1.count("sluice_actor_mailbox_depth{actor=\"lane/0\",kind=\"batcher\"}") == 1);
    // The supervisor's view of each lane's outstanding work: one family, the lane as a label.
    CHECK(m1.count("sluice_actor_lane_load_frames{actor=\"supervisor\",kind=\"supervisor\",index=\"0\"}") == 1);
    bool expert_pairs = false;
    for (const auto& [k, v] : m1) expert_pairs = expert_pairs || (k.rfind("sluice_batcher_expert_pairs_total{", 0) == 0 && v > 0);
    CHECK(expert_pairs);
  }

  TEST_CASE("/metrics carries the text of services added beside the server, every scrape, in the order added") {
    served s;
    auto calls = std::make_shared<int>(0);
    s.server->add_metrics([calls] {
      return "# TYPE sluice_test_side_calls_total counter\nsluice_test_side_calls_total " + std::to_string(++*calls) + "\n";
    });
    s.server->add_metrics([] { return std::string("# TYPE sluice_test_side_flag gauge\nsluice_test_side_flag 1\n"); });
    const auto body = http_request(s.port, http::verb::get, "/metrics").body;
    const auto first = body.find("sluice_test_side_calls_total 1\n"), second = body.find("sluice_test_side_flag 1\n");
    CHECK(first != std::string::npos);
    CHECK(second != std::string::npos);
    CHECK(first < second);
    // Called again at the next scrape (a live figure, not a copy taken when added).
    const auto again = parse_prometheus(http_request(s.port, http::verb::get, "/metrics").body);
    CHECK(again.at("sluice_test_side_calls_total") == 2);
    CHECK(again.at("sluice_up") == 1);
  }

  TEST_CASE("hostile input: each bad client gets its own clear error, a good stream alongside is untouched") {
    config::sluice_config cfg;
    cfg.server.max_message_bytes = 64 * 1024;
    cfg.server.max_body_bytes = 256 * 1024;
    served s(cfg);
    const auto frames = call_pcm16_frames();
    auto good = std::async(std::launch::async, [&] { return ws_session(s.port, "/v1/stream", {start_8k}, frames, {end_msg}); });

    auto expect_error = [&](const ws_result& r, const std::string& code, int close_code) {
      REQUIRE_FALSE(r.messages.empty());
      CHECK(r.messages.back()["type"] == "error");
      CHECK(r.messages.back()["code"] == code);
      CHECK_FALSE(r.messages.back()["reason"].get<std::string>().empty());
      CHECK(r.close_code == close_code);
    };
    // Binary before the start message.
    expect_error(ws_session(s.port, "/v1/stream", {}, {{1, 2, 3, 4}}, {}), "protocol", 1008);
    // Malformed JSON.
    expect_error(ws_session(s.port, "/v1/stream", {"{not json"}, {}, {}), "bad_json", 1008);
    // Wrong encoding, channel count, rate.
    expect_error(ws_session(s.port, "/v1/stream", {R"({"type":"start","sample_rate":8000,"encoding":"mp3"})"}, {}, {}),
                 "bad_request", 1003);
    expect_error(ws_session(s.port, "/v1/stream", {R"({"type":"start","sample_rate":8000,"channels":2})"}, {}, {}),
                 "bad_request", 1003);
    expect_error(ws_session(s.port, "/v1/stream", {R"({"type":"start","sample_rate":3})"}, {}, {}), "bad_request", 1003);
    expect_error(ws_session(s.port, "/funasr", {R"({"mode":"fast","audio_fs":16000})"}, {}, {}), "bad_request", 1003);
    // An unknown message after the start.
    expect_error(ws_session(s.port, "/v1/stream", {start_8k, R"({"type":"pause"})"}, {}, {}), "protocol", 1008);
    // A message over the limit: Beast answers with close code 1009 and drops the connection;
    // a client still writing its frame sees the connection end instead of reading the code.
    auto big = ws_session(s.port, "/v1/stream", {start_8k}, {std::vector<uint8_t>(80 * 1024, 0)}, {});
    CHECK_MESSAGE((big.close_code == 1009 || !big.error.empty()), big.error);
    for (const auto& m : big.messages) CHECK(m["type"] != "final");
    // Garbage audio in the right framing: an "audio" error, the stream goes on to its end.
    auto garbage = ws_session(s.port, "/v1/stream", {R"({"type":"start","sample_rate":16000,"encoding":"opus"})"},
                              {{0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x13}}, {end_msg});
    CHECK(garbage.close_code == 1000);
    bool audio_error = false;
    for (const auto& m : garbage.messages) audio_error = audio_error || (m["type"] == "error" && m["code"] == "audio");
    CHECK(audio_error);
    CHECK(garbage.messages.back()["type"] == "end");
    // HTTP: a body over the limit, not audio, a path and a method that are not served.
    CHECK(http_request(s.port, http::verb::post, "/v1/transcribe", std::string(300 * 1024, 'x')).status == 413);
    auto notaudio = http_request(s.port, http::verb::post, "/v1/transcribe", "this is not audio");
    CHECK(notaudio.status == 415);
    CHECK(json::parse(notaudio.body)["error"].get<std::string>().find("unrecognised") != std::string::npos);
    CHECK(http_request(s.port, http::verb::get, "/nothing").status == 404);
    CHECK(http_request(s.port, http::verb::delete_, "/v1/actors").status == 405);

    auto g = good.get();
    CHECK(g.close_code == 1000);
    CHECK(finals_of(g).size() >= 2);
    CHECK(g.messages.back()["type"] == "end");
    // The engine is still serving.
    CHECK(http_request(s.port, http::verb::get, "/healthz").status == 200);
  }

  TEST_CASE("connection limit: past server.max_connections a client gets 503 and the others are served") {
    config::sluice_config cfg;
    cfg.server.max_connections = 2;
    served s(cfg);
    asio::io_context ioc;
    tcp::socket a(ioc), b(ioc);
    a.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.port));
    b.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.port));
    // Once the server has counted both connections a third is refused; once they close it is served.
    CHECK(poll_until([&] { return http_request(s.port, http::verb::get, "/healthz").status == 503; }));
    a.close();
    b.close();
    CHECK(poll_until([&] { return http_request(s.port, http::verb::get, "/healthz").status == 200; }));
  }
}
