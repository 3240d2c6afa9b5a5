#include "net/ws_session.hpp"

#include <chrono>
#include <deque>
#include <string>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/messages.hpp"

namespace sluice::net {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace asio = boost::asio;
using json = nlohmann::json;

constexpr float funasr_weight_scale = 0.1f;  // FunASR hotword weights (~10-30) to ln-units per token

class session;

// The session's mailbox in the actor world: opens the channel, receives its events, and posts
// them onto the session's strand (the session itself is not an actor).
caf::behavior bridge_actor(caf::event_based_actor* self, std::weak_ptr<session> s, caf::actor supervisor);

class session : public std::enable_shared_from_this<session> {
 public:
  session(asio::ip::tcp::socket socket, std::shared_ptr<server_state> st, ws_dialect dialect,
          std::shared_ptr<void> slot)
      : ws_(std::move(socket)), st_(std::move(st)), dialect_(dialect), slot_(std::move(slot)),
        session_timer_(ws_.get_executor()) {}

  ~session() {
    if (bridge_) caf::anon_send_exit(bridge_, caf::exit_reason::user_shutdown);
  }

  void run(http::request<http::string_body> req) {
    ws_.set_option(websocket::stream_base::timeout{std::chrono::seconds(30),
                                                   std::chrono::seconds(st_->cfg.idle_timeout_s), false});
    ws_.read_message_max(static_cast<std::size_t>(st_->cfg.max_message_bytes));
    // FunASR's clients ask for the "binary" subprotocol: it is granted when asked for.
    const bool binary_protocol = req[http::field::sec_websocket_protocol].find("binary") != beast::string_view::npos;
    ws_.set_option(websocket::stream_base::decorator([binary_protocol](websocket::response_type& res) {
      res.set(http::field::server, "sluice");
      if (binary_protocol) res.set(http::field::sec_websocket_protocol, "binary");
    }));
    ws_.async_accept(req, beast::bind_front_handler(&session::on_accept, shared_from_this()));
  }

  void set_tenant(std::string tenant) { tenant_ = std::move(tenant); }

  // -- called on the strand by the bridge ----------------------------------------------------
  void on_open(const actors::open_reply& r) {
    if (closing_) {
      // The client left while its channel was being opened: end the channel at once.
      if (r.ok) caf::anon_send(r.handle, actors::end_atom::value);
      return;
    }
    if (!r.ok) {
      const bool full = r.reason.find("full") != std::string::npos || r.reason.find("overloaded") != std::string::npos ||
                        r.reason.find("shutting down") != std::string::npos;
      fail(full ? "overloaded" : "bad_request", r.reason,
           full ? websocket::close_code::try_again_later : websocket::close_code::unknown_data);
      return;
    }
    channel_ = r.handle;
    state_ = state::streaming;
    ++st_->ws_sessions;
    counted_ = true;
    for (auto& b : early_audio_) caf::anon_send(channel_, actors::audio_atom::value, std::move(b));
    early_audio_.clear();
    if (end_requested_) caf::anon_send(channel_, actors::end_atom::value);
    if (dialect_ == ws_dialect::sluice) send(json{{"type", "ready"}, {"channel", r.channel}}.dump());
  }

  void on_event(const actors::transcript_event& ev) {
    if (closing_) return;
    if (!ev.error.empty()) {
      send(json{{"type", "error"}, {"code", ev.utterance < 0 ? "audio" : "utterance_lost"}, {"reason", ev.error}}.dump());
      return;
    }
    if (dialect_ == ws_dialect::sluice) {
      json words = json::array();
      for (const auto& w : ev.words)
        words.push_back({{"word", w.word}, {"start_ms", w.start_ms}, {"end_ms", w.end_ms}, {"confidence", w.confidence}});
      send(json{{"type", ev.is_final ? "final" : "partial"}, {"utterance", ev.utterance}, {"text", ev.text},
                {"start_ms", ev.start_ms}, {"end_ms", ev.end_ms}, {"words", words}}
               .dump());
      return;
    }
    funasr_event(ev);
  }

  void on_drained() {
    if (closing_) return;
    if (dialect_ == ws_dialect::sluice) send(json{{"type", "end"}}.dump());
    else send(json{{"mode", funasr_mode(true)}, {"wav_name", wav_name_}, {"text", ""}, {"is_final", true}}.dump());
    close(websocket::close_code::normal, "done");
  }

  asio::any_io_executor executor() { return ws_.get_executor(); }

 private:
  enum class state { awaiting_start, opening, streaming, ending };

  void on_accept(beast::error_code ec) {
    if (ec) return;
    session_timer_.expires_after(std::chrono::seconds(st_->cfg.max_session_s));
    session_timer_.async_wait([w = weak_from_this()](beast::error_code e) {
      if (e) return;
      if (auto s = w.lock()) s->end_stream();
    });
    do_read();
  }

  void do_read() {
    ws_.async_read(buffer_, beast::bind_front_handler(&session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec) {
      if (ec == websocket::error::message_too_big) {
        // Beast has already answered with close code 1009 (too big); nothing more can be sent.
        spdlog::info("ws: message larger than {} bytes: closed with 1009", st_->cfg.max_message_bytes);
        gone();
        // Keep reading until the client's own close arrives, so it gets to read ours.
        buffer_.consume(buffer_.size());
        ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code, std::size_t) {});
        return;
      }
      // The client is gone (closed, reset, idle timeout): end its channel; results are dropped.
      gone();
      return;
    }
    if (closing_) return;
    if (ws_.got_text()) on_text(beast::buffers_to_string(buffer_.data()));
    else on_binary();
    buffer_.consume(buffer_.size());
    if (!closing_) do_read();
  }

  void on_text(const std::string& text) {
    auto j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      fail("bad_json", "text messages must be JSON objects", websocket::close_code::policy_error);
      return;
    }
    if (state_ == state::awaiting_start) {
      start(j);
      return;
    }
    const bool end = dialect_ == ws_dialect::sluice ? j.value("type", "") == "end"
                                                    : (j.contains("is_speaking") && j["is_speaking"].is_boolean() &&
                                                       !j["is_speaking"].get<bool>());
    if (end) {
      end_stream();
      return;
    }
    fail("protocol", dialect_ == ws_dialect::sluice ? "expected {\"type\":\"end\"} or binary audio"
                                                    : "expected {\"is_speaking\": false} or binary audio",
         websocket::close_code::policy_error);
  }

  void on_binary() {
    if (state_ == state::awaiting_start) {
      fail("protocol", "binary audio before the start message", websocket::close_code::policy_error);
      return;
    }
    if (state_ == state::ending) return;  // audio after the end: ignored
    auto data = buffer_.data();
    std::vector<uint8_t> bytes(asio::buffer_size(data));
    asio::buffer_copy(asio::buffer(bytes), data);
    if (state_ == state::opening) early_audio_.push_back(std::move(bytes));
    else caf::anon_send(channel_, actors::audio_atom::value, std::move(bytes));
  }

  void start(const json& j) {
    actors::channel_request req;
    try {
      if (dialect_ == ws_dialect::sluice) {
        if (j.contains("type") && j["type"] != "start") throw std::runtime_error("the first message must be the start message");
        req.sample_rate = j.value("sample_rate", 16000);
        req.codec = j.value("encoding", std::string("pcm_s16le"));
        if (req.codec == "f32") throw std::runtime_error("encoding f32 is for in-process use; send pcm_s16le");
        const int channels = j.value("channels", 1);
        if (channels != 1)
          throw std::runtime_error("channels = " + std::to_string(channels) +
                                   ": one stream carries one channel; open a stream per channel");
        req.partials = j.value("partials", true);
        if (j.contains("hotwords")) {
          for (const auto& h : j["hotwords"]) {
            if (h.is_string()) req.hotwords.push_back(h.get<std::string>());
            else if (h.is_object())
              req.hotwords.push_back(h.at("phrase").get<std::string>() + " " + std::to_string(h.value("weight", 3.0)));
            else throw std::runtime_error("hotwords: give strings or {\"phrase\", \"weight\"} objects");
          }
        }
      } else {
        mode_ = j.value("mode", std::string("2pass"));
        if (mode_ != "online" && mode_ != "offline" && mode_ != "2pass")
          throw std::runtime_error("mode \"" + mode_ + "\": choose online, offline or 2pass");
        wav_name_ = j.value("wav_name", std::string("sluice"));
        req.sample_rate = j.value("audio_fs", 16000);
        const std::string fmt = j.value("wav_format", std::string("pcm"));
        if (fmt != "pcm") throw std::runtime_error("wav_format \"" + fmt + "\": only pcm (16-bit little-endian) streams");
        req.codec = "pcm_s16le";
        req.partials = mode_ != "offline";
        if (j.contains("hotwords") && j["hotwords"].is_string()) req.hotwords = funasr_hotwords(j["hotwords"].get<std::string>());
        if (j.contains("is_speaking") && j["is_speaking"].is_boolean() && !j["is_speaking"].get<bool>())
          end_requested_ = true;
      }
    } catch (const std::exception& e) {
      fail("bad_request", e.what(), websocket::close_code::unknown_data);
      return;
    }
    req.tenant = tenant_;  // auth: whose stream (net/auth/tenant_view.hpp)
    state_ = state::opening;
    bridge_ = st_->engine->system().spawn(bridge_actor, weak_from_this(), st_->engine->supervisor());
    caf::anon_send(bridge_, actors::open_atom::value, req);
  }

  static std::vector<std::string> funasr_hotwords(const std::string& s) {
    std::vector<std::string> out;
    auto j = json::parse(s, nullptr, false);
    if (!j.is_discarded() && j.is_object()) {
      for (auto& [phrase, w] : j.items())
        out.push_back(phrase + " " + std::to_string(w.is_number() ? w.get<double>() * funasr_weight_scale : 3.0));
      return out;
    }
    std::string cur;
    for (char c : s + ",") {
      if (c == ',' || c == '\n') {
        if (cur.find_first_not_of(' ') != std::string::npos) out.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    return out;
  }

  std::string funasr_mode(bool final) const {
    if (mode_ == "2pass") return final ? "2pass-offline" : "2pass-online";
    return mode_;
  }

  void funasr_event(const actors::transcript_event& ev) {
    auto& prev = funasr_partial_[ev.utterance];
    if (!ev.is_final || mode_ == "online") {
      if (mode_ == "offline") return;
      // Online messages carry the text new since the last one of this utterance.
      std::string delta = ev.text.rfind(prev, 0) == 0 ? ev.text.substr(prev.size()) : ev.text;
      prev = ev.text;
      if (ev.is_final) funasr_partial_.erase(ev.utterance);
      if (delta.empty()) return;
      send(json{{"mode", funasr_mode(false)}, {"wav_name", wav_name_}, {"text", delta}, {"is_final", false}}.dump());
      return;
    }
    funasr_partial_.erase(ev.utterance);
    std::string ts = "[";
    json ts_list = json::array();
    for (std::size_t i = 0; i < ev.words.size(); ++i) {
      ts += (i ? "," : "") + std::string("[") + std::to_string(ev.words[i].start_ms) + "," +
            std::to_string(ev.words[i].end_ms) + "]";
      ts_list.push_back({ev.words[i].start_ms, ev.words[i].end_ms});
    }
    ts += "]";
    json sent = {{"text_seg", ev.text}, {"punc", ""}, {"start", ev.start_ms}, {"end", ev.end_ms}, {"ts_list", ts_list}};
    send(json{{"mode", funasr_mode(true)},
              {"wav_name", wav_name_},
              {"text", ev.text},
              {"is_final", false},
              {"timestamp", ts},
              {"stamp_sents", json::array({sent})}}
             .dump());
  }

  void end_stream() {
    if (state_ == state::streaming) {
      caf::anon_send(channel_, actors::end_atom::value);
      state_ = state::ending;
    } else if (state_ == state::opening) {
      end_requested_ = true;
    } else if (state_ == state::awaiting_start) {
      close(websocket::close_code::normal, "no stream");
    }
  }

  void gone() {
    closing_ = true;
    session_timer_.cancel();
    if (state_ == state::streaming) caf::anon_send(channel_, actors::end_atom::value);
    if (counted_ && (state_ == state::streaming || state_ == state::ending)) {
      --st_->ws_sessions;
      counted_ = false;
    }
    state_ = state::ending;
  }

  void fail(const std::string& code, const std::string& reason, websocket::close_code cc) {
    spdlog::info("ws: {}: {}", code, reason);
    send(json{{"type", "error"}, {"code", code}, {"reason", reason}}.dump());
    close(cc, code);
  }

  void send(std::string text) {
    queue_.push_back(std::move(text));
    if (queue_.size() == 1) do_write();
  }

  void do_write() {
    ws_.text(true);
    ws_.async_write(asio::buffer(queue_.front()), beast::bind_front_handler(&session::on_write, shared_from_this()));
  }

  void on_write(beast::error_code ec, std::size_t) {
    if (ec) {
      gone();
      return;
    }
    queue_.pop_front();
    if (!queue_.empty()) do_write();
    else if (close_pending_) do_close();
  }

  void close(websocket::close_code cc, const std::string& reason) {
    if (close_pending_) return;
    if (state_ == state::streaming) {
      caf::anon_send(channel_, actors::end_atom::value);
      state_ = state::ending;
    }
    closing_ = true;
    close_pending_ = true;
    close_reason_ = websocket::close_reason(cc, reason);
    if (queue_.empty()) do_close();
  }

  void do_close() {
    session_timer_.cancel();
    ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code) { self->gone(); });
  }

  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
  std::shared_ptr<server_state> st_;
  ws_dialect dialect_;
  std::shared_ptr<void> slot_;
  asio::steady_timer session_timer_;
  std::deque<std::string> queue_;
  state state_ = state::awaiting_start;
  bool closing_ = false, close_pending_ = false, end_requested_ = false, counted_ = false;
  websocket::close_reason close_reason_;
  caf::actor channel_, bridge_;
  std::vector<std::vector<uint8_t>> early_audio_;
  std::string mode_ = "2pass", wav_name_ = "sluice";
  std::map<int64_t, std::string> funasr_partial_;
  std::string tenant_;  // auth: the admitted key's tenant; empty without keys
};

template <class F>
void post_to(const std::weak_ptr<session>& w, F f) {
  if (auto s = w.lock()) asio::post(s->executor(), [s, f = std::move(f)]() mutable { f(*s); });
}

caf::behavior bridge_actor(caf::event_based_actor* self, std::weak_ptr<session> w, caf::actor supervisor) {
  return {
      [=](actors::open_atom, actors::channel_request& req) {
        self->request(supervisor, std::chrono::seconds(10), actors::open_atom::value, req,
                      caf::actor_cast<caf::actor>(self))
            .then([=](actors::open_reply& r) { post_to(w, [r](session& s) { s.on_open(r); }); },
                  [=](caf::error& e) {
                    actors::open_reply r{false, "the engine did not answer: " + self->system().render(e), 0, {}};
                    post_to(w, [r](session& s) { s.on_open(r); });
                  });
      },
      [=](actors::transcript_event& ev) { post_to(w, [ev](session& s) { s.on_event(ev); }); },
      [=](actors::drained_atom, actors::channel_id) {
        post_to(w, [](session& s) { s.on_drained(); });
        self->quit();
      },
  };
}

}  // namespace

void run_ws_session(asio::ip::tcp::socket socket, http::request<http::string_body> req, std::shared_ptr<server_state> st,
                    ws_dialect dialect, std::shared_ptr<void> slot, auth::principal who) {
  auto s = std::make_shared<session>(std::move(socket), std::move(st), dialect, std::move(slot));
  s->set_tenant(std::move(who.tenant));  // auth: the stream's channel carries its tenant
  s->run(std::move(req));
}

}  // namespace sluice::net
