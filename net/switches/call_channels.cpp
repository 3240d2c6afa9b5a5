#include "net/switches/call_channels.hpp"

#include <boost/asio/post.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "actors/channel_progress.hpp"
#include "net/steady_time.hpp"

namespace sluice::net::switches {

namespace {

namespace asio = boost::asio;

// How long the engine may take to answer a channel request.
constexpr auto open_timeout = std::chrono::seconds(10);
// Audio held for a channel until it opens (at most open_timeout): 8 MiB is minutes of any
// switch's codec, so only a sender far faster than real time reaches it.
constexpr std::size_t max_early_bytes = std::size_t{8} << 20;

// Posts `f` onto the call's executor; it runs only if the call is still alive. Never throws
// into the actor. The actor holds neither the call nor its strand: a strand must not outlive
// its io_context, and the actor can outlive the server (ASan: a strand destroyed with the actor
// after ~server). So the call is locked, and its executor used, only under the server's I/O
// gate, while the context is known to exist.
template <class F>
void post_to(const std::weak_ptr<call_channels>& w, const std::shared_ptr<server_state::io_gate>& gate,
             const char* where, F f) noexcept {
  try {
    std::lock_guard lock(gate->mu);
    if (!gate->open) return;
    auto alive = w.lock();
    if (!alive) return;
    asio::post(alive->executor(), [w, where, f = std::move(f)]() mutable {
      auto c = w.lock();
      if (!c) return;
      try {
        f(*c);
      } catch (const std::exception& e) {
        spdlog::error("call {}: {} handler threw: {}", c->id(), where, e.what());
        c->abort(std::string("error: internal (") + e.what() + ")");
      } catch (...) {
        spdlog::error("call {}: {} handler threw an exception of unknown type", c->id(), where);
        c->abort("error: internal");
      }
    });
  } catch (const std::exception& e) {
    spdlog::error("call bridge: could not post {}: {}", where, e.what());
  }
}

// The actor that receives one call's channel results. It maps the engine's channel ids to the
// call's channel indexes (actor-local state) and hands everything to the call's executor.
struct bridge_state {
  std::vector<std::pair<actors::channel_id, int>> index_of;
  int drained = 0;
  int channels = 0;
  int lookup(actors::channel_id ch) const {
    for (const auto& [id, index] : index_of)
      if (id == ch) return index;
    return -1;
  }
};

caf::behavior bridge_actor(caf::stateful_actor<bridge_state>* self, std::weak_ptr<call_channels> w,
                           std::shared_ptr<server_state::io_gate> exec, actors::supervisor_actor_type supervisor, int channels) {
  self->state.channels = channels;
  self->set_exception_handler([w, exec](caf::scheduled_actor*, std::exception_ptr&) -> caf::error {
    post_to(w, exec, "bridge failure", [](call_channels& c) { c.on_lost("the call's bridge actor failed"); });
    return caf::make_error(caf::exit_reason::unhandled_exception);
  });
  // A channel stops normally after its drain or an abort; any other exit ends the call.
  self->set_down_handler([w, exec](caf::down_msg& dm) {
    if (!dm.reason || dm.reason == caf::exit_reason::normal) return;
    post_to(w, exec, "channel failure", [](call_channels& c) { c.on_lost("a channel of the call failed"); });
  });
  return {
      [=](actors::open_atom, actors::channel_request& req, int index) {
        self->request(supervisor, open_timeout, actors::open_atom::value, req, caf::actor_cast<caf::actor>(self))
            .then(
                [=](actors::open_reply& r) {
                  if (r.ok) {
                    self->state.index_of.emplace_back(r.channel, index);
                    self->monitor(r.handle);
                  }
                  post_to(w, exec, "open", [r, index](call_channels& c) { c.on_open(index, r); });
                },
                [=](caf::error& e) {
                  actors::open_reply r{false, "the engine did not answer: " + self->system().render(e), 0, {},
                                       actors::refusal::unavailable};
                  post_to(w, exec, "open", [r, index](call_channels& c) { c.on_open(index, r); });
                });
      },
      [=](actors::transcript_event& ev) {
        const int index = self->state.lookup(ev.channel);
        if (index < 0) return;
        post_to(w, exec, "event", [ev, index](call_channels& c) { c.on_event(index, ev); });
      },
      [=](actors::drained_atom, actors::channel_id ch) {
        const int index = self->state.lookup(ch);
        if (index >= 0) post_to(w, exec, "drained", [index](call_channels& c) { c.on_drained(index); });
        if (++self->state.drained >= self->state.channels) self->quit();
      },
  };
}

}  // namespace

std::shared_ptr<call_channels> call_channels::open(std::shared_ptr<server_state> st, asio::any_io_executor exec,
                                                   calls::call_start start, actors::channel_request request,
                                                   callbacks cb, uint64_t log_id) {
  std::shared_ptr<call_channels> c(new call_channels());
  c->st_ = std::move(st);
  c->exec_ = std::move(exec);
  c->cb_ = std::move(cb);
  c->log_id_ = log_id;
  c->began_ = std::chrono::steady_clock::now();
  const auto labels = start.channel_labels;
  const auto source = start.source;
  request.tenant = start.tenant;
  c->id_ = c->st_->calls->begin(std::move(start));
  c->handles_.resize(labels.size());
  c->early_.resize(labels.size());
  c->early_bytes_.assign(labels.size(), 0);
  c->codec_ = request.codec;
  c->sample_rate_ = request.sample_rate;
  // The bucket's tokens are microseconds of audio (actors::audio_message_us, as the WebSocket
  // flow control measures it): speed x 1 s of them a second, burst_s seconds saved up.
  const double speed = c->st_->cfg.switch_max_speed;
  c->speed_.assign(labels.size(), speed > 0 ? sip::rate_limiter(static_cast<int64_t>(speed * 1e6),
                                                                int64_t{c->st_->cfg.switch_burst_s} * 1'000'000)
                                            : sip::rate_limiter());
  spdlog::info("call {}: {} call on connection {} with {} channel(s)", c->id_, source, log_id, labels.size());
  c->bridge_ = c->st_->engine->system().spawn(bridge_actor, std::weak_ptr<call_channels>(c), c->st_->io,
                                              c->st_->engine->supervisor(), static_cast<int>(labels.size()));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    auto req = request;
    req.label = labels[i];
    caf::anon_send(c->bridge_, actors::open_atom::value, req, static_cast<int>(i));
  }
  return c;
}

call_channels::~call_channels() {
  if (!done_) {
    for (auto& h : handles_)
      if (h) caf::anon_send(h, actors::abort_atom::value);
    if (st_ && st_->calls) st_->calls->end(id_, end_reason_.empty() ? "connection closed" : end_reason_);
  }
  if (bridge_) caf::anon_send_exit(bridge_, caf::exit_reason::user_shutdown);
}

template <class F>
void call_channels::guarded(const char* where, F&& f) noexcept {
  try {
    f();
  } catch (const std::exception& e) {
    spdlog::error("call {}: {} callback threw: {}", id_, where, e.what());
    abort(std::string("error: internal (") + e.what() + ")");
  } catch (...) {
    spdlog::error("call {}: {} callback threw an exception of unknown type", id_, where);
    abort("error: internal");
  }
}

void call_channels::audio(int index, std::vector<uint8_t> bytes) {
  if (end_requested_ || done_ || index < 0 || index >= channel_count() || bytes.empty()) return;
  const auto i = static_cast<std::size_t>(index);
  const auto now_us = steady_us();
  // A message whose duration cannot be told (a malformed Opus packet) is left to the decoder.
  const auto us = actors::audio_message_us(codec_, sample_rate_, bytes);
  if (us && !speed_[i].admit(static_cast<std::size_t>(*us), now_us)) {
    spdlog::info("call {}: channel {} sends faster than server.switch_max_speed allows: the call is ended", id_, index);
    // Short enough for a WebSocket close reason (123 bytes at most).
    fail("audio faster than " + fmt::format("{:g}", st_->cfg.switch_max_speed) + "x real time after a " +
             std::to_string(st_->cfg.switch_burst_s) + " s burst (server.switch_max_speed, switch_burst_s)",
         actors::refusal::bad_request, true);
    return;
  }
  if (handles_[i]) caf::anon_send(handles_[i], actors::audio_atom::value, std::move(bytes));
  else if ((early_bytes_[i] += bytes.size()) > max_early_bytes)
    fail("more than " + std::to_string(max_early_bytes >> 20) + " MiB of audio before the channel opened",
         actors::refusal::bad_request, true);
  else early_[i].push_back(std::move(bytes));
}

void call_channels::event(calls::call_event ev) {
  if (done_) return;
  if (ev.at_ms == 0)
    ev.at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began_).count();
  st_->calls->event(id_, std::move(ev));
}

void call_channels::update_metadata(const nlohmann::json& metadata) {
  if (!done_) st_->calls->update_metadata(id_, metadata);
}

void call_channels::end(std::string reason) {
  if (end_requested_ || done_) return;
  end_requested_ = true;
  end_reason_ = std::move(reason);
  if (opened_ == channel_count()) send_end();
}

void call_channels::send_end() {
  for (auto& h : handles_) caf::anon_send(h, actors::end_atom::value);
}

void call_channels::abort(std::string reason) {
  if (done_) return;
  for (auto& h : handles_)
    if (h) caf::anon_send(h, actors::abort_atom::value);
  handles_.assign(handles_.size(), actors::channel_actor_type{});
  finish(reason);
}

void call_channels::finish(const std::string& reason) {
  done_ = true;
  st_->calls->end(id_, reason);
  spdlog::info("call {}: ended ({})", id_, reason);
  if (bridge_) caf::anon_send_exit(bridge_, caf::exit_reason::user_shutdown);
  bridge_ = nullptr;
}

void call_channels::fail(const std::string& why, actors::refusal code, bool limit) {
  if (done_) return;
  abort("error: " + why);
  if (cb_.failed) guarded("failed", [&] { cb_.failed(why, code, limit); });
}

void call_channels::on_open(int index, const actors::open_reply& r) {
  if (done_) {
    // The call ended while this channel was being opened: stop the channel at once.
    if (r.ok) caf::anon_send(r.handle, actors::abort_atom::value);
    return;
  }
  if (!r.ok) {
    spdlog::info("call {}: channel {} refused: {}", id_, index, r.reason);
    fail(r.reason, r.code);
    return;
  }
  const auto i = static_cast<std::size_t>(index);
  handles_[i] = r.handle;
  for (auto& b : early_[i]) caf::anon_send(handles_[i], actors::audio_atom::value, std::move(b));
  early_[i].clear();
  if (++opened_ < channel_count()) return;
  if (cb_.ready) guarded("ready", [&] { cb_.ready(); });
  if (end_requested_ && !done_) send_end();
}

void call_channels::on_event(int index, const actors::transcript_event& ev) {
  if (done_) return;
  st_->calls->result(id_, index, ev);
  if (cb_.result) guarded("result", [&] { cb_.result(index, ev); });
}

void call_channels::on_drained(int index) {
  if (done_) return;
  handles_[static_cast<std::size_t>(index)] = nullptr;  // it has stopped by itself
  if (++drained_ < channel_count()) return;
  // Without end() the engine drained the channel itself: the server is shutting down.
  finish(end_requested_ ? end_reason_ : "server shutting down");
  if (cb_.drained) guarded("drained", [&] { cb_.drained(); });
}

void call_channels::on_lost(const std::string& why) {
  spdlog::warn("call {}: {}", id_, why);
  fail(why, actors::refusal::internal);
}

}  // namespace sluice::net::switches
