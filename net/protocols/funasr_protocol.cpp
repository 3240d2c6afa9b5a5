#include "net/protocols/funasr_protocol.hpp"

#include "net/funasr_replies.hpp"
#include "net/json_fields.hpp"
#include "net/ws_messages.hpp"

namespace sluice::net {

namespace {

class funasr_protocol final : public ws_protocol {
 public:
  std::string_view name() const override { return "funasr"; }

  // Only FunASR's Python client offers "binary"; the others offer nothing.
  std::string accept_subprotocol(std::string_view offered) const override {
    return offers_subprotocol(offered, "binary") ? "binary" : "";
  }

  void on_text(ws_transport& t, std::string_view text) override {
    if (!replies_) return start(t, text);
    if (auto end = parse_funasr_end(text)) {
      end_input(t);
    } else {
      const bool not_json = end.error().code == errc::corrupt;
      t.fail(not_json ? "bad_json" : "protocol", end.error().message, ws_close::policy);
    }
  }

  void on_binary(ws_transport& t, std::vector<uint8_t> bytes) override {
    if (!replies_) return t.fail("protocol", "binary audio before the start message", ws_close::policy);
    t.push_audio(0, std::move(bytes));
  }

  void on_open(ws_transport&, std::size_t, const actors::open_reply&) override {}

  void on_event(ws_transport& t, std::size_t, const actors::transcript_event& ev) override {
    if (!ev.error.empty()) {
      t.send_text(*error_message(ev.utterance < 0 ? "audio" : "utterance_lost", ev.error));
      return;
    }
    if (auto reply = replies_->on_event(ev)) t.send_text(to_wire(*reply));
  }

  void on_drained(ws_transport& t, std::size_t) override {
    t.send_text(to_wire(replies_->last()));
    t.close(ws_close::normal, "done");
  }

  std::optional<std::string> error_message(std::string_view code, std::string_view reason) const override {
    return to_wire(json{{"type", "error"}, {"code", code}, {"reason", reason}, {"text", ""}, {"is_final", false}});
  }

 private:
  void start(ws_transport& t, std::string_view text) {
    auto r = parse_funasr_start(text);
    if (!r) {
      if (r.error().code == errc::corrupt) return t.fail("bad_json", r.error().message, ws_close::policy);
      return t.fail("bad_request", r.error().message, ws_close::unsupported);
    }
    replies_.emplace(r->mode, r->wav_name, r->itn);
    calls::call_start call;
    call.source = "funasr";
    call.channel_labels = {"mono"};
    call.metadata = {{"mode", r->mode}, {"wav_name", r->wav_name}, {"sample_rate", r->request.sample_rate},
                     {"itn", r->itn}};
    t.begin_call(std::move(call));
    t.open_channels({std::move(r->request)});
    if (r->end_requested) end_input(t);
  }

  void end_input(ws_transport& t) {
    t.end_channel(0);
    t.input_done();
  }

  std::optional<funasr_replies> replies_;  ///< set by the start message
};

}  // namespace

std::unique_ptr<ws_protocol> make_funasr_protocol() { return std::make_unique<funasr_protocol>(); }

}  // namespace sluice::net
