// Flow control of WebSocket audio (issue 9): a client that sends faster than the engine
// recognizes is held back by TCP (the server stops reading its connection while the audio it
// has not recognized yet is over server.ws_max_buffered_audio_ms), instead of having its audio
// queued without bound. Its transcript must not change, nor that of a stream beside it.
#include "tests/net/honest_stream.hpp"

#include <caf/all.hpp>

#include <sys/socket.h>

#include <functional>
#include <thread>

#include "actors/messages.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

constexpr int high_water_ms = 2000;
// call_pcm16_frames() cuts the call into 100 ms messages.
constexpr int64_t message_ms = 100;

config::sluice_config flow_config() {
  config::sluice_config cfg;
  cfg.server.ws_max_buffered_audio_ms = high_water_ms;
  // Admission by queue wait is for overload; these streams are fast on purpose, and a busy
  // 2-core runner must not refuse the honest stream for a wait that is not the flood's doing.
  cfg.engine.max_queue_wait_ms = 60000;
  return cfg;
}

// Channel 0 of the bundled call (27 s) twice over: 54 s of 8 kHz PCM16 in 100 ms messages.
std::vector<std::vector<uint8_t>> long_call() {
  auto frames = call_pcm16_frames();
  const auto once = frames;
  frames.insert(frames.end(), once.begin(), once.end());
  return frames;
}

// The finals of `frames` sent straight to an engine channel, without WebSocket or flow control.
std::vector<std::string> in_process_finals(actors::engine& e, const std::vector<std::vector<uint8_t>>& frames) {
  caf::scoped_actor self{e.system()};
  actors::channel_request req;
  req.sample_rate = 8000;
  req.codec = "pcm_s16le";
  const auto r = e.open(req, caf::actor_cast<caf::actor>(self));
  REQUIRE_MESSAGE(r.ok, r.reason);
  for (const auto& f : frames) self->send(r.handle, actors::audio_atom::value, f);
  self->send(r.handle, actors::end_atom::value);
  std::vector<std::string> finals;
  bool drained = false, timed_out = false;
  while (!drained && !timed_out)
    self->receive([&](actors::transcript_event& ev) {
                    if (ev.is_final && ev.error.empty()) finals.push_back(ev.text);
                  },
                  [&](actors::drained_atom, actors::channel_id) { drained = true; },
                  caf::after(std::chrono::seconds(120)) >> [&] { timed_out = true; });
  REQUIRE_MESSAGE(drained, "the in-process channel did not drain within 120 s");
  return finals;
}

// A client that writes `frames` on /v1/stream as fast as its socket takes them (no pacing, no
// reads until its end is sent), then reads to the server's close.
struct flood_result {
  std::vector<std::string> finals;
  int close_code = -1;
  std::string last_type;
};

flood_result flood(uint16_t port, const std::vector<std::vector<uint8_t>>& frames) {
  asio::io_context ioc;
  websocket::stream<tcp::socket> ws(ioc);
  ws.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  ws.handshake("127.0.0.1", "/v1/stream");
  ws.text(true);
  ws.write(asio::buffer(honest_start));
  ws.binary(true);
  for (const auto& f : frames) ws.write(asio::buffer(f));
  ws.text(true);
  ws.write(asio::buffer(std::string(R"({"type":"end"})")));
  std::vector<json> messages;
  beast::error_code ec;
  for (;;) {
    beast::flat_buffer b;
    ws.read(b, ec);
    if (ec) break;
    messages.push_back(json::parse(beast::buffers_to_string(b.data()), nullptr, false));
  }
  flood_result out;
  out.finals = final_texts(messages);
  if (ec == websocket::error::closed) out.close_code = ws.reason().code;
  if (!messages.empty() && messages.back().is_object()) out.last_type = messages.back().value("type", std::string());
  return out;
}

double counter_of(const json& snap, const char* kind, const char* key) {
  const auto k = snap["kinds"].find(kind);
  if (k == snap["kinds"].end() || !k->contains("counters") || !(*k)["counters"].contains(key)) return 0;
  return (*k)["counters"][key].get<double>();
}

double supervised_channels(const json& snap) {
  for (const auto& a : snap["actors"])
    if (a["kind"] == "supervisor" && a["gauges"].contains("channels")) return a["gauges"]["channels"].get<double>();
  return -1;
}

}  // namespace

TEST_SUITE("ws backpressure") {
  TEST_CASE("a client pushing 54 s of audio at full speed is paused by the server, its backlog stays under the mark plus one message, its finals equal the in-process ones") {
    served s(flow_config());
    const auto frames = long_call();
    const auto ref = in_process_finals(*s.engine, frames);
    REQUIRE(ref.size() >= 4);
    const auto got = flood(s.port, frames);
    const auto flow = s.server->ws_flow_control();
    MESSAGE("pauses " << flow.read_pauses << ", buffered audio peak " << flow.buffered_audio_peak_ms << " ms (mark "
                      << high_water_ms << " ms)");
    CHECK(got.close_code == 1000);
    CHECK(got.last_type == "end");
    CHECK(got.finals == ref);
    CHECK(flow.read_pauses > 0);
    CHECK(flow.buffered_audio_peak_ms <= high_water_ms + message_ms);
    CHECK(flow.buffered_audio_peak_ms >= high_water_ms);  // the mark was reached: the bound above says something
    CHECK(flow.paused_now == 0);
  }

  TEST_CASE("an honest stream beside a flooding one gets exactly the finals it gets alone, and the flood is held back") {
    served s(flow_config());
    const auto frames = long_call();
    const auto flood_ref = in_process_finals(*s.engine, frames);
    const auto ref = reference_finals(s.port);
    const auto before = s.server->ws_flow_control();
    flood_result flooded;
    std::thread flooder([&] { flooded = flood(s.port, frames); });
    // The honest stream starts once the flood has filled its backlog to the mark.
    const bool flooding = poll_until([&] { return s.server->ws_flow_control().buffered_audio_peak_ms >= high_water_ms; });
    std::vector<std::string> honest;
    if (flooding) honest = honest_stream(s.port).finish();
    flooder.join();
    REQUIRE(flooding);
    const auto flow = s.server->ws_flow_control();
    CHECK(honest == ref);
    CHECK(flooded.finals == flood_ref);
    CHECK(flooded.close_code == 1000);
    CHECK(flow.read_pauses > before.read_pauses);
    CHECK(flow.buffered_audio_peak_ms <= high_water_ms + message_ms);
  }

  TEST_CASE("a client that resets or half-closes its connection while paused has its channel freed") {
    served s(flow_config());
    const auto frames = long_call();
    // How the client leaves: a reset (SO_LINGER 0: an RST, as a crashed client), or a FIN
    // without its end message.
    const std::vector<std::pair<const char*, std::function<void(tcp::socket&)>>> leaves = {
        {"reset",
         [](tcp::socket& sock) {
           sock.set_option(asio::socket_base::linger(true, 0));
           sock.close();
         }},
        {"half-close", [](tcp::socket& sock) { sock.shutdown(tcp::socket::shutdown_send); }},
    };
    for (const auto& [how, leave] : leaves) {
      const std::string leaving = how;
      CAPTURE(leaving);
      asio::io_context ioc;
      websocket::stream<tcp::socket> ws(ioc);
      ws.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.port));
      ws.handshake("127.0.0.1", "/v1/stream");
      ws.text(true);
      ws.write(asio::buffer(honest_start));
      // Non-blocking writes, so that a socket that no longer takes data (the server has
      // stopped reading and the kernel buffers are full) does not block this thread; a frame
      // cut short by it does not matter: the client leaves.
      ws.next_layer().non_blocking(true);
      ws.binary(true);
      beast::error_code ec;
      std::size_t written = 0;
      for (const auto& f : frames) {
        ws.write(asio::buffer(f), ec);
        if (ec) break;
        ++written;
      }
      MESSAGE(std::string(how) << ": " << written << " of " << frames.size() << " messages written whole before the socket stopped taking them");
      const bool paused = poll_until([&] { return s.server->ws_flow_control().paused_now == 1; });
      const double aborted_before = counter_of(json::parse(s.engine->snapshot()), "channel", "aborted");
      leave(ws.next_layer());
      CHECK(paused);
      const auto gone = [](const json& j) {
        return j["summary"]["channels_live"].get<double>() == 0 && supervised_channels(j) == 0;
      };
      json snap;
      const bool freed = poll_until([&] {
        snap = json::parse(s.engine->snapshot(), nullptr, false);
        return !snap.is_discarded() && gone(snap);
      });
      CHECK_MESSAGE(freed, "channel not freed within 60 s: " << snap.dump());
      // Stopped, not transcribed to its end (an aborted channel counts itself as it stops).
      CHECK(poll_until([&] {
        return counter_of(json::parse(s.engine->snapshot()), "channel", "aborted") == aborted_before + 1;
      }));
      CHECK(poll_until([&] { return s.server->ws_flow_control().paused_now == 0; }));
    }
  }
}
