#include "net/protocols/sherpa_protocol.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "net/json_fields.hpp"
#include "net/server.hpp"

namespace sluice::net {

namespace {

constexpr double ms_per_s = 1000.0;

class sherpa_protocol final : public ws_protocol {
 public:
  std::string_view name() const override { return "sherpa"; }

  void on_text(ws_transport& t, std::string_view text) override {
    if (text != "Done")
      return t.fail("protocol", "expected binary float32 samples or the text \"Done\"", ws_close::policy);
    t.input_done();
    if (t.channel_count() == 0) return finish(t);  // no audio at all
    t.end_channel(0);
  }

  void on_binary(ws_transport& t, std::vector<uint8_t> bytes) override {
    auto samples = sherpa_samples(bytes);
    if (!samples) return t.fail("protocol", samples.error().message, ws_close::policy);
    if (t.channel_count() == 0) open(t);
    t.push_samples(0, std::move(*samples));
  }

  void on_open(ws_transport&, std::size_t, const actors::open_reply&) override {}

  void on_event(ws_transport& t, std::size_t, const actors::transcript_event& ev) override {
    if (!ev.error.empty()) {
      t.send_text(*error_message(ev.utterance < 0 ? "audio" : "utterance_lost", ev.error));
      return;
    }
    auto r = result(ev);
    if (ev.is_final) {
      last_final_ = r;
      ++segment_;
    }
    t.send_text(to_wire(r));
  }

  void on_drained(ws_transport& t, std::size_t) override { finish(t); }

  std::optional<std::string> error_message(std::string_view code, std::string_view reason) const override {
    return to_wire(json{{"error", code}, {"reason", reason}});
  }

 private:
  void open(ws_transport& t) {
    actors::channel_request req;
    req.codec = "f32";
    req.sample_rate = t.server().listeners.sherpa_sample_rate;
    calls::call_start call;
    call.source = "sherpa";
    call.channel_labels = {"mono"};
    call.metadata = {{"sample_rate", req.sample_rate}};
    t.begin_call(std::move(call));
    t.open_channels({std::move(req)});
  }

  json result(const actors::transcript_event& ev) const {
    const double start_s = static_cast<double>(ev.start_ms) / ms_per_s;
    json tokens = json::array(), stamps = json::array(), words = json::array();
    for (const auto& w : ev.words) {
      tokens.push_back(w.word);
      stamps.push_back(static_cast<double>(w.start_ms - ev.start_ms) / ms_per_s);
      words.push_back({{"word", w.word},
                       {"start", static_cast<double>(w.start_ms) / ms_per_s},
                       {"end", static_cast<double>(w.end_ms) / ms_per_s},
                       {"conf", w.confidence}});
    }
    return json{{"text", ev.text},     {"tokens", tokens},          {"timestamps", stamps},
                {"segment", segment_}, {"start_time", start_s},     {"is_final", ev.is_final},
                {"is_eof", false},     {"words", words}};
  }

  void finish(ws_transport& t) {
    json last = last_final_.is_null() ? result(actors::transcript_event{}) : last_final_;
    if (last_final_.is_null()) last["segment"] = segment_;
    last["is_final"] = true;
    last["is_eof"] = true;
    t.send_text(to_wire(last));
    t.send_text("Done!");
    t.close(ws_close::normal, "done");
  }

  int64_t segment_ = 0;  ///< the current segment: finals so far
  json last_final_;      ///< the newest final's result (null before one)
};

}  // namespace

result<std::vector<float>> sherpa_samples(const std::vector<uint8_t>& bytes) {
  if (bytes.size() % sizeof(float) != 0)
    return fail(errc::invalid_argument, "binary messages are float32 samples: " + std::to_string(bytes.size()) +
                                            " bytes is not a multiple of 4");
  std::vector<float> out(bytes.size() / sizeof(float));
  // The wire is little-endian float32, as this (x86-64 / aarch64) host's floats are.
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());  // data() may be null
  for (auto& x : out) {
    if (!std::isfinite(x)) return fail(errc::invalid_argument, "a float32 sample is not a finite number");
    x = std::clamp(x, -1.0f, 1.0f);
  }
  return out;
}

std::unique_ptr<ws_protocol> make_sherpa_protocol() { return std::make_unique<sherpa_protocol>(); }

}  // namespace sluice::net
