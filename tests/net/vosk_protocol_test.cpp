// The Vosk server protocol, by a lock-step client written from its published format
// (PROTOCOLS.md; vosk-server's websocket/test.py): an optional config, int16 PCM in 0.2 s
// messages each answered by exactly one reply, {"eof" : 1} answered by the final, then close
// 1000; {"reset" : 1}; and its hostile inputs.
#include <algorithm>

#include "tests/net/honest_stream.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

// A lock-step Vosk client: sends one message, reads exactly one reply.
class vosk_client {
 public:
  vosk_client(uint16_t port, const std::string& path = "/") : ws_(ioc_) {
    ws_.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    ws_.handshake("127.0.0.1", path);
  }
  void send_text(const std::string& t) {
    ws_.text(true);
    ws_.write(asio::buffer(t));
  }
  void send_binary(const std::vector<uint8_t>& b) {
    ws_.binary(true);
    ws_.write(asio::buffer(b));
  }
  json reply() {
    beast::flat_buffer b;
    ws_.read(b);
    auto j = json::parse(beast::buffers_to_string(b.data()), nullptr, false);
    REQUIRE_MESSAGE(j.is_object(), beast::buffers_to_string(b.data()));
    return j;
  }
  // Reads to the end: the close code (-1 when the connection ended otherwise) and any messages.
  int close_code(std::vector<json>* extra = nullptr) {
    beast::error_code ec;
    for (;;) {
      beast::flat_buffer b;
      ws_.read(b, ec);
      if (ec) return ec == websocket::error::closed ? ws_.reason().code : -1;
      if (extra) extra->push_back(json::parse(beast::buffers_to_string(b.data()), nullptr, false));
    }
  }

 private:
  asio::io_context ioc_;
  websocket::stream<tcp::socket> ws_;
};

constexpr std::size_t samples_per_message = 1600;  // 0.2 s at 8 kHz, as test.py sends

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v)
    if (!s.empty()) out += (out.empty() ? "" : " ") + s;
  return out;
}

}  // namespace

TEST_SUITE("vosk protocol") {
  TEST_CASE("lock-step: one reply per frame (partial or result), eof gives the final then close 1000 - text equals /v1/stream's") {
    served s({}, true);
    const auto pcm = call_pcm16(0, 8000);
    const auto frames = pcm16_messages(pcm, samples_per_message);
    auto ref = ws_session(s.port, "/v1/stream", {R"({"type":"start","sample_rate":8000})"}, frames, {R"({"type":"end"})"});
    const auto want = joined(final_texts(ref.messages));
    REQUIRE(want.size() > 10);
    for (const auto& [port, path] :
         {std::pair<uint16_t, std::string>{s.server->port(net::ws_listener::vosk), "/"}, {s.port, "/vosk"}}) {
      CAPTURE(path);
      REQUIRE(port != 0);
      vosk_client c(port, path);
      c.send_text(R"({ "config" : { "sample_rate" : 8000, "words" : true } })");  // no reply
      std::vector<std::string> results;
      int partials = 0;
      for (const auto& f : frames) {
        c.send_binary(f);
        const auto r = c.reply();
        CHECK((r.contains("partial") != r.contains("text")));  // exactly one kind
        if (r.contains("partial")) {
          ++partials;
          continue;
        }
        results.push_back(r["text"]);
        REQUIRE(r.contains("result"));
        for (const auto& w : r["result"]) {
          for (const char* key : {"conf", "start", "end", "word"}) CHECK(w.contains(key));
          CHECK(w["end"].get<double>() >= w["start"].get<double>());
          CHECK(w["start"].get<double>() < 60.0);  // seconds, not ms
        }
      }
      CHECK(partials > 0);
      c.send_text(R"({"eof" : 1})");
      const auto last = c.reply();
      REQUIRE(last.contains("text"));
      results.push_back(last["text"]);
      std::vector<json> extra;
      CHECK(c.close_code(&extra) == 1000);
      CHECK(extra.empty());  // nothing after the final
      CHECK(joined(results) == want);
    }
  }

  TEST_CASE("a client faster than real time, one message per reply, gets the partial of the audio it sent: the same replies on every run, finals in the replies to the frames that ended them") {
    // Vosk's own server answers a message once it has decoded it. A lock-step client that sends
    // the next message as soon as it has a reply (vosk-server's test.py) runs far faster than real
    // time; the replies must still be those of the audio sent so far: partials that grow with it,
    // each final in the reply to a frame soon after its utterance's end, whatever the machine's
    // speed. So two runs of the same audio get the same replies, frame by frame.
    served s({}, true);
    const auto pcm = call_pcm16(0, 8000);
    const auto frames = pcm16_messages(pcm, samples_per_message);
    auto run = [&] {
      vosk_client c(s.server->port(net::ws_listener::vosk));
      c.send_text(R"({"config": {"sample_rate": 8000, "words": true}})");
      std::vector<json> replies;
      for (const auto& f : frames) {
        c.send_binary(f);
        replies.push_back(c.reply());
      }
      c.send_text(R"({"eof" : 1})");
      replies.push_back(c.reply());
      CHECK(c.close_code() == 1000);
      return replies;
    };
    const auto first = run();
    const auto second = run();
    REQUIRE(first.size() == frames.size() + 1);
    CHECK(first == second);

    // Bounds from how the engine works, in seconds of audio sent (frame k's reply follows
    // (k + 1) * 0.2 s): a 0.64 s attention chunk is computed once 45 ms of audio after it has
    // come (moe/stream_state.hpp), so by a reply every word that ended more than 1 s before is
    // in the partial (0.64 + 0.045, the word's alignment and the VAD's preroll within the
    // rest). An utterance ends once the VAD has seen min_silence_ms (0.3 s) of silence after
    // its speech, whose end is the last speech frame plus up to max_edge_ms (0.2 s) of edge
    // frames and hangover_ms (0.06 s); the last word's aligned end can precede its last speech
    // frame by a few of the model's 40 ms frames (a CTC peak comes early; allow 0.3 s); and the
    // reply that carries the final is that of the 0.2 s message holding that point. So: at
    // most 0.3 + 0.2 + 0.06 + 0.3 + 0.2 = 1.06 s after the last word's end; checked at 1.5 s
    // (replies sent at once put finals 3 s and more late).
    const double message_s = static_cast<double>(samples_per_message) / 8000.0;
    const double audio_s = static_cast<double>(pcm.size()) / 8000.0;
    std::size_t utterance_from = 0, early_finals = 0;
    for (std::size_t k = 0; k + 1 < first.size(); ++k) {
      const auto& r = first[k];
      if (!r.contains("text")) continue;
      CAPTURE(r.dump());
      ++early_finals;
      const auto& words = r["result"];
      REQUIRE(!words.empty());
      const double last_end = words.back()["end"].get<double>();
      CHECK(static_cast<double>(k + 1) * message_s <= last_end + 1.5);
      // The partials of this utterance: up to date with the audio sent, each reply's.
      bool shown = false;
      for (std::size_t j = utterance_from; j < k; ++j) {
        const auto partial = first[j].value("partial", std::string());
        const double sent_s = static_cast<double>(j + 1) * message_s;
        std::size_t due = 0;
        for (const auto& w : words)
          if (w["end"].get<double>() <= sent_s - 1.0) ++due;
        const auto have = partial.empty() ? 0 : std::count(partial.begin(), partial.end(), ' ') + 1;
        CAPTURE(j);
        CAPTURE(partial);
        CHECK(static_cast<std::size_t>(have) + 1 >= due);  // one word of slack: a partial may still split or join one
        shown = shown || !partial.empty();
      }
      CHECK(shown);
      // The last partial starts as the final does (before, replies to a fast client were empty).
      REQUIRE(k > 0);
      const auto last_partial = first[k - 1].value("partial", std::string());
      const auto final_text = r["text"].get<std::string>();
      CHECK(last_partial.substr(0, last_partial.find(' ')) == final_text.substr(0, final_text.find(' ')));
      utterance_from = k + 1;
    }
    // The bundled call's three utterances: the first two end long before the audio does.
    CHECK(early_finals >= 2);
    CHECK(audio_s > 20.0);
  }

  TEST_CASE("reset gives every final so far in one result and the stream goes on - max_alternatives gives alternatives") {
    served s({}, true);
    const auto frames = pcm16_messages(call_pcm16(0, 8000), samples_per_message);
    vosk_client c(s.server->port(net::ws_listener::vosk));
    c.send_text(R"({"config": {"sample_rate": 8000.0, "max_alternatives": 2, "phrase_list": ["refund"]}})");
    std::string before;
    const std::size_t half = frames.size() / 2;
    for (std::size_t i = 0; i < half; ++i) {
      c.send_binary(frames[i]);
      const auto r = c.reply();
      if (r.contains("alternatives")) before += r["alternatives"][0]["text"].get<std::string>() + " ";
      else CHECK(r.contains("partial"));
    }
    c.send_text(R"({"reset" : 1})");
    const auto reset = c.reply();
    REQUIRE(reset.contains("alternatives"));
    REQUIRE(reset["alternatives"].size() >= 1);
    CHECK(reset["alternatives"].size() <= 2);
    CHECK(reset["alternatives"][0].contains("confidence"));
    before += reset["alternatives"][0]["text"].get<std::string>();
    CHECK(before.size() > 5);  // the first half had speech
    // The stream goes on after the reset: more replies, one per frame, and a final at eof.
    for (std::size_t i = half; i < frames.size(); ++i) {
      c.send_binary(frames[i]);
      const auto r = c.reply();
      CHECK((r.contains("partial") || r.contains("alternatives")));
    }
    c.send_text(R"({"eof" : 1})");
    CHECK(c.reply().contains("alternatives"));
    CHECK(c.close_code() == 1000);
    // One call, its results all on its one channel.
    REQUIRE(poll_until([&] {
      auto l = s.server->calls().list();
      return l.size() == 1 && !l.front().live;
    }));
    const auto call = s.server->calls().list().front();
    CHECK(call.start.source == "vosk");
    REQUIRE(call.channels.size() == 1);
    CHECK(call.channels[0].finals.size() >= 2);
  }

  TEST_CASE("max_alternatives as Vosk's test_alternatives.py asks (20): each result lists distinct readings, the first the final /v1/stream gives") {
    served s({}, true);
    const auto frames = pcm16_messages(call_pcm16(0, 8000), samples_per_message);
    // /v1/stream with "alternatives": its finals carry them too, the first the final's own text.
    auto ref = ws_session(s.port, "/v1/stream", {R"({"type":"start","sample_rate":8000,"alternatives":3})"}, frames,
                          {R"({"type":"end"})"});
    const auto want = joined(final_texts(ref.messages));
    REQUIRE(want.size() > 10);
    std::size_t most = 0;
    for (const auto& m : ref.messages) {
      if (m.value("type", "") != "final") continue;
      REQUIRE(m.contains("alternatives"));
      CHECK(m["alternatives"].size() <= 3);
      CHECK(m["alternatives"][0]["text"] == m["text"]);
      CHECK(m["alternatives"][0]["display_text"] == m["display_text"]);
      most = std::max<std::size_t>(most, m["alternatives"].size());
    }
    CHECK(most >= 2);
    vosk_client c(s.server->port(net::ws_listener::vosk));
    c.send_text(R"({"config" : { "max_alternatives" : 20, "sample_rate" : 8000 } })");
    std::vector<std::string> best;
    std::size_t listed = 0;
    auto take = [&](const json& r) {
      if (r.contains("partial")) return;
      REQUIRE(r.contains("alternatives"));
      const auto& alts = r["alternatives"];
      REQUIRE(alts.size() >= 1);
      CHECK(alts.size() <= 20);
      listed = std::max<std::size_t>(listed, alts.size());
      std::vector<std::string> texts;
      double sum = 0;
      for (const auto& a : alts) {
        CHECK(!a.contains("result"));  // words only when asked for
        CHECK(std::find(texts.begin(), texts.end(), a["text"].get<std::string>()) == texts.end());
        texts.push_back(a["text"]);
        CHECK(a["confidence"].get<double>() >= 0.0);
        sum += a["confidence"].get<double>();
      }
      CHECK(sum <= 1.0 + 1e-4);
      best.push_back(alts[0]["text"]);
    };
    for (const auto& f : frames) {
      c.send_binary(f);
      take(c.reply());
    }
    c.send_text(R"({"eof" : 1})");
    take(c.reply());
    CHECK(c.close_code() == 1000);
    CHECK(joined(best) == want);
    CHECK(listed >= 2);
  }

  TEST_CASE("hostile Vosk input: config after audio, wrong types, unknown message, not JSON get a clear error - honest stream unaffected") {
    served s({}, true);
    const auto ref = reference_finals(s.port);
    honest_stream h(s.port);
    const uint16_t port = s.server->port(net::ws_listener::vosk);
    const std::vector<uint8_t> some_audio(3200, 0);
    struct bad_case {
      bool audio_first;
      std::string text;
      std::string code, about;
    };
    const std::vector<bad_case> cases = {
        {true, R"({"config": {"sample_rate": 16000}})", "protocol", "before any audio"},
        {false, R"({"config": {"sample_rate": "8000"}})", "protocol", "sample_rate"},
        {false, R"({"config": {"sample_rate": 8000.5}})", "protocol", "sample_rate"},
        {false, R"({"config": {"phrase_list": "refund"}})", "protocol", "phrase_list"},
        {false, R"({"config": {"words": "yes"}})", "protocol", "words"},
        {false, R"({"config": {"max_alternatives": 1000}})", "protocol", "max_alternatives"},
        {false, R"({"config": 5})", "protocol", "config"},
        {false, R"({"eof": "now"})", "protocol", "eof"},
        {false, R"({"pause": 1})", "protocol", "expected"},
        {false, "{not json", "bad_json", ""},
    };
    for (const auto& bc : cases) {
      CAPTURE(bc.text);
      vosk_client c(port);
      if (bc.audio_first) {
        c.send_binary(some_audio);
        CHECK(c.reply().contains("partial"));
      }
      c.send_text(bc.text);
      const auto r = c.reply();  // the error is the reply of the message that caused it
      CHECK(r.value("code", std::string()) == bc.code);
      CHECK_MESSAGE(r.value("error", std::string()).find(bc.about) != std::string::npos, r.dump());
      CHECK(c.close_code() == 1008);
    }
    CHECK(h.finish() == ref);
  }
}
