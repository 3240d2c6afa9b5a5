#include "net/protocols/sluice_protocol.hpp"

#include "net/json_fields.hpp"
#include "net/result_json.hpp"
#include "net/ws_messages.hpp"

namespace sluice::net {

namespace {

class sluice_protocol final : public ws_protocol {
 public:
  std::string_view name() const override { return "stream"; }

  void on_text(ws_transport& t, std::string_view text) override {
    if (!started_) return start(t, text);
    if (auto end = parse_sluice_end(text)) {
      t.end_channel(0);
      t.input_done();
    } else {
      const bool not_json = end.error().code == errc::corrupt;
      t.fail(not_json ? "bad_json" : "protocol", end.error().message, ws_close::policy);
    }
  }

  void on_binary(ws_transport& t, std::vector<uint8_t> bytes) override {
    if (!started_) return t.fail("protocol", "binary audio before the start message", ws_close::policy);
    t.push_audio(0, std::move(bytes));
  }

  void on_open(ws_transport& t, std::size_t, const actors::open_reply& r) override {
    t.send_text(to_wire(json{{"type", "ready"}, {"channel", r.channel}}));
  }

  void on_event(ws_transport& t, std::size_t, const actors::transcript_event& ev) override {
    if (!ev.error.empty()) {
      t.send_text(to_wire(
          json{{"type", "error"}, {"code", ev.utterance < 0 ? "audio" : "utterance_lost"}, {"reason", ev.error}}));
      return;
    }
    t.send_text(to_wire(result_json(ev)));
  }

  void on_drained(ws_transport& t, std::size_t) override {
    t.send_text(to_wire(json{{"type", "end"}}));
    t.close(ws_close::normal, "done");
  }

  std::optional<std::string> error_message(std::string_view code, std::string_view reason) const override {
    return to_wire(json{{"type", "error"}, {"code", code}, {"reason", reason}});
  }

 private:
  void start(ws_transport& t, std::string_view text) {
    auto req = parse_sluice_start(text);
    if (!req) {
      if (req.error().code == errc::corrupt) return t.fail("bad_json", req.error().message, ws_close::policy);
      return t.fail("bad_request", req.error().message, ws_close::unsupported);
    }
    started_ = true;
    calls::call_start call;
    call.source = "stream";
    call.channel_labels = {"mono"};
    call.metadata = {{"sample_rate", req->sample_rate}, {"encoding", req->codec}};
    t.begin_call(std::move(call));
    t.open_channels({std::move(*req)});
  }

  bool started_ = false;
};

}  // namespace

std::unique_ptr<ws_protocol> make_sluice_protocol() { return std::make_unique<sluice_protocol>(); }

}  // namespace sluice::net
