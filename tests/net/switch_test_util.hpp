#pragma once
// Shared by the switch-protocol tests (AudioSocket, mod_audio_fork/jambonz, Twilio, AudioHook):
// the reference finals of a channel (the same bytes straight into an engine channel), the
// bundled call as μ-law or PCM16 frames, and reading a finished call from the registry.
#include "tests/net/net_test_util.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dsp/g711.hpp"

namespace sluice::test {

// The final texts, in utterance order, of `frames` (codec and rate as in `req`) sent straight
// into an engine channel: what a protocol must reproduce for the same audio.
inline std::vector<std::string> direct_finals(actors::engine& engine, actors::channel_request req,
                                              const std::vector<std::vector<uint8_t>>& frames) {
  caf::scoped_actor self{engine.system()};
  auto ch = engine.open(req, caf::actor_cast<caf::actor>(self));
  REQUIRE_MESSAGE(ch.ok, ch.reason);
  for (const auto& f : frames) self->send(ch.handle, actors::audio_atom::value, f);
  self->send(ch.handle, actors::end_atom::value);
  std::vector<actors::transcript_event> finals;
  bool drained = false;
  while (!drained)
    self->receive([&](actors::transcript_event& ev) { if (ev.is_final) finals.push_back(ev); },
                  [&](actors::drained_atom, actors::channel_id) { drained = true; },
                  caf::after(std::chrono::seconds(120)) >> [&] { drained = true; FAIL("the direct channel did not drain"); });
  std::sort(finals.begin(), finals.end(), [](auto& a, auto& b) { return a.utterance < b.utterance; });
  std::vector<std::string> out;
  for (const auto& ev : finals) out.push_back(ev.text);
  return out;
}

// direct_finals of channel `ch` of the bundled call in `codec` ("pcm_s16le" or "mulaw") at 8 kHz,
// cut in frames of `per_frame` samples; computed once per test binary (the engine's results for
// the same bytes and config do not change; server_test checks that served equals direct).
inline std::vector<std::string> reference_call_finals(actors::engine& engine, const std::string& codec, int ch,
                                                      std::size_t per_frame);

// The final texts of channel `ch` of a call record, in utterance order.
inline std::vector<std::string> record_finals(const net::calls::call_record& rec, std::size_t ch) {
  auto finals = rec.channels.at(ch).finals;
  std::sort(finals.begin(), finals.end(), [](auto& a, auto& b) { return a.utterance < b.utterance; });
  std::vector<std::string> out;
  for (const auto& ev : finals) out.push_back(ev.text);
  return out;
}

inline std::string joined(const std::vector<std::string>& v) {
  std::string o;
  for (const auto& t : v) o += "[" + t + "] ";
  return o;
}

// Channel `ch` of the bundled call as 16-bit samples.
inline std::vector<int16_t> call_samples(int ch) {
  auto a = dsp::decode_audio_file(SLUICE_TEST_DATA_DIR "/sample_call_8k_mulaw_stereo.wav");
  REQUIRE(a.has_value());
  std::vector<int16_t> out;
  for (const float x : a->channels.at(static_cast<std::size_t>(ch)))
    out.push_back(static_cast<int16_t>(std::lround(std::clamp(x, -1.0f, 1.0f) * 32767.0f)));
  return out;
}

// `samples` cut into frames of `per_frame` samples, as PCM16 little-endian bytes.
inline std::vector<std::vector<uint8_t>> pcm16_frames(const std::vector<int16_t>& samples, std::size_t per_frame) {
  std::vector<std::vector<uint8_t>> frames;
  for (std::size_t i = 0; i < samples.size(); i += per_frame) {
    std::vector<uint8_t> f;
    for (std::size_t j = i; j < std::min(samples.size(), i + per_frame); ++j) {
      f.push_back(static_cast<uint8_t>(samples[j] & 0xFF));
      f.push_back(static_cast<uint8_t>((samples[j] >> 8) & 0xFF));
    }
    frames.push_back(std::move(f));
  }
  return frames;
}

// The finished call of `source` in the registry (the newest one); fails the test if none.
inline net::calls::call_record ended_call(net::server& server, const std::string& source) {
  for (const auto& c : server.calls().list())
    if (c.start.source == source && !c.live) return c;
  FAIL("no ended call of source " << source);
  return {};
}

// Channel `ch` of the bundled call as μ-law bytes (its own coding: the file is μ-law).
inline std::vector<uint8_t> call_mulaw(int ch) {
  std::vector<uint8_t> out;
  for (const auto v : call_samples(ch)) out.push_back(dsp::linear_to_mulaw(v));
  return out;
}

inline std::vector<std::vector<uint8_t>> byte_frames(const std::vector<uint8_t>& bytes, std::size_t per_frame) {
  std::vector<std::vector<uint8_t>> frames;
  for (std::size_t i = 0; i < bytes.size(); i += per_frame)
    frames.emplace_back(bytes.begin() + static_cast<std::ptrdiff_t>(i),
                        bytes.begin() + static_cast<std::ptrdiff_t>(std::min(bytes.size(), i + per_frame)));
  return frames;
}

inline std::vector<std::string> reference_call_finals(actors::engine& engine, const std::string& codec, int ch,
                                                      std::size_t per_frame) {
  static std::map<std::string, std::vector<std::string>> cache;
  const auto key = codec + "/" + std::to_string(ch) + "/" + std::to_string(per_frame);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  actors::channel_request req;
  req.sample_rate = 8000;
  req.codec = codec;
  const auto frames = codec == "mulaw" ? byte_frames(call_mulaw(ch), per_frame)
                                       : pcm16_frames(call_samples(ch), per_frame);
  auto finals = direct_finals(engine, req, frames);
  REQUIRE(finals.size() >= 2);
  cache[key] = finals;
  return finals;
}

// One step of a scripted WebSocket client: a text or a binary message.
struct ws_message {
  bool text = true;
  std::string payload;
  static ws_message txt(std::string s) { return {true, std::move(s)}; }
  static ws_message bin(const std::vector<uint8_t>& b) { return {false, std::string(b.begin(), b.end())}; }
};

struct ws_client_options {
  std::string subprotocol;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Connects to `path`, sends `script` in order (stopping at the first failed write: the server
// may close early), then reads every message until the close.
inline ws_result ws_script(uint16_t port, const std::string& path, const std::vector<ws_message>& script,
                           const ws_client_options& opt = {}) {
  asio::io_context ioc;
  websocket::stream<tcp::socket> ws(ioc);
  ws.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  ws.set_option(websocket::stream_base::decorator([opt](websocket::request_type& req) {
    if (!opt.subprotocol.empty()) req.set(http::field::sec_websocket_protocol, opt.subprotocol);
    for (const auto& [k, v] : opt.headers) req.set(k, v);
  }));
  ws.handshake("127.0.0.1", path);
  ws_result out;
  beast::error_code ec;
  for (const auto& m : script) {
    ws.text(m.text);
    ws.write(asio::buffer(m.payload), ec);
    if (ec) break;
  }
  for (;;) {
    beast::flat_buffer buf;
    ws.read(buf, ec);
    if (ec) {
      if (ec == websocket::error::closed) {
        out.close_code = ws.reason().code;
        out.close_reason = std::string(ws.reason().reason.c_str());
      }
      else out.error = ec.message();
      break;
    }
    auto j = json::parse(beast::buffers_to_string(buf.data()), nullptr, false);
    out.messages.push_back(j.is_discarded() ? json(beast::buffers_to_string(buf.data())) : j);
  }
  return out;
}

// The one call of `source` in the registry once it has ended (the switch's close and the
// call's drain race: the condition is waited on).
inline net::calls::call_record wait_ended_call(net::server& server, const std::string& source) {
  std::optional<net::calls::call_record> found;
  const bool ended = poll_until([&] {
    for (const auto& c : server.calls().list())
      if (c.start.source == source && !c.live) {
        found = c;
        return true;
      }
    return false;
  });
  REQUIRE_MESSAGE(ended, "no ended call of source " << source);
  return *found;
}

}  // namespace sluice::test
