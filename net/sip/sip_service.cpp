#include "net/sip/sip_service.hpp"

// sofia-sip lets the application name the types its callbacks carry.
#define NUA_MAGIC_T ::sluice::net::sip::sip_service::impl
#define SU_ROOT_MAGIC_T ::sluice::net::sip::sip_service::impl

#include <sofia-sip/nua.h>
#include <sofia-sip/nua_tag.h>
#include <sofia-sip/sip_status.h>
#include <sofia-sip/sip_tag.h>
#include <sofia-sip/su.h>
#include <sofia-sip/su_tag.h>
#include <sofia-sip/su_wait.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <spdlog/spdlog.h>

#include "net/sip/channel_bridge.hpp"
#include "net/sip/rtp_receiver.hpp"
#include "net/sip/sdp_offer.hpp"
#include "net/sip/siprec_metadata.hpp"

namespace sluice::net::sip {

namespace asio = boost::asio;

namespace {
// One pass of sofia's loop waits at most this long, so commands posted from other threads
// (channel opened, stop) wait at most this long too.
constexpr long loop_step_ms = 20;
constexpr auto periodic_check = std::chrono::seconds(1);
constexpr auto stop_grace = std::chrono::seconds(3);
// m= lines per offer: a SIPREC recorder sends two (one per party); more is not a call.
constexpr std::size_t max_streams_per_call = 8;
constexpr int sip_busy_everywhere = 503;

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The Content-Type with its parameters (the multipart boundary), as sofia parsed it.
std::string content_type_of(const sip_t* sip) {
  if (!sip->sip_content_type || !sip->sip_content_type->c_type) return "application/sdp";
  std::string ct = sip->sip_content_type->c_type;
  if (sip->sip_content_type->c_params)
    for (auto* p = sip->sip_content_type->c_params; *p; ++p) ct += std::string(";") + *p;
  return ct;
}

// A Warning header (RFC 3261 20.43) carrying `text`, with the quotes and line breaks a quoted
// string may not hold replaced.
std::string warning_of(const std::string& text) {
  std::string safe;
  for (char ch : text) safe += (ch == '"' || ch == '\\' || ch == '\r' || ch == '\n') ? ' ' : ch;
  return "399 sluice \"" + safe + "\"";
}

std::string address_of(const sip_addr_s* a) {
  if (!a) return {};
  std::string s;
  if (a->a_url->url_user) s = std::string(a->a_url->url_user) + "@";
  if (a->a_url->url_host) s += a->a_url->url_host;
  return s;
}
}  // namespace

struct sip_call {
  uint64_t key = 0;
  nua_handle_t* nh = nullptr;
  calls::call_id id;
  sdp_offer offer;
  std::vector<std::shared_ptr<rtp_receiver>> rtp;
  std::vector<caf::actor> bridges;
  std::shared_ptr<call_completion> completion;
  int opens_pending = 0;
  std::string open_error;
  bool answered = false, refused = false;
  std::optional<int64_t> answer_at_ms;
  uint64_t session_id = 0, session_version = 1;
  std::string answer;
  int64_t started_ms = 0;
  std::string end_reason;
};

struct sip_service::impl {
  config::sip_config cfg;
  actors::engine* engine = nullptr;
  std::shared_ptr<calls::call_registry> registry;
  std::shared_ptr<port_pool> pool;
  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread io_thread, sip_thread;
  su_root_t* root = nullptr;
  nua_t* nua = nullptr;
  std::atomic<bool> stop_requested{false}, stopped{false};
  std::atomic<int> live{0};
  // Work for the sofia thread from other threads. Shared, so that a bridge actor that answers
  // after the service is gone posts into a queue nobody runs rather than into freed memory.
  struct command_queue {
    std::mutex mu;
    std::deque<std::function<void(impl&)>> items;
  };
  std::shared_ptr<command_queue> commands = std::make_shared<command_queue>();
  // Sofia thread only:
  std::map<uint64_t, std::shared_ptr<sip_call>> calls;
  std::map<nua_handle_t*, uint64_t> by_handle;
  uint64_t next_key = 1;
  bool shutdown_done = false;

  static void post(const std::shared_ptr<command_queue>& q, std::function<void(impl&)> f) {
    std::lock_guard lock(q->mu);
    q->items.push_back(std::move(f));
  }
  void run_commands() {
    std::deque<std::function<void(impl&)>> now;
    {
      std::lock_guard lock(commands->mu);
      now.swap(commands->items);
    }
    for (auto& f : now) f(*this);
  }

  result<void> loop(std::promise<result<void>>& started);
  void on_event(nua_event_t event, int status, const char* phrase, nua_handle_t* nh, const sip_t* sip, tagi_t tags[]);
  void on_invite(nua_handle_t* nh, const sip_t* sip);
  void on_reinvite(sip_call& c, const sip_t* sip);
  void on_channel_open(uint64_t key, bool ok, const std::string& reason);
  void answer(sip_call& c);
  void terminated(nua_handle_t* nh, const std::string& reason);
  void check_calls();
  std::shared_ptr<sip_call> find(nua_handle_t* nh) {
    auto it = by_handle.find(nh);
    if (it == by_handle.end()) return nullptr;
    auto c = calls.find(it->second);
    return c == calls.end() ? nullptr : c->second;
  }
  void refuse_503(nua_handle_t* nh, const char* phrase) {
    const auto retry = std::to_string(cfg.retry_after_s);
    nua_respond(nh, sip_busy_everywhere, phrase, SIPTAG_RETRY_AFTER_STR(retry.c_str()), TAG_END());
  }
};

namespace {
void event_callback(nua_event_t event, int status, char const* phrase, nua_t*, sip_service::impl* self,
                    nua_handle_t* nh, nua_hmagic_t*, sip_t const* sip, tagi_t tags[]) {
  // Nothing may unwind through sofia's C frames.
  try {
    self->on_event(event, status, phrase, nh, sip, tags);
  } catch (const std::exception& e) {
    spdlog::error("sip: handling {} threw: {}", nua_event_name(event), e.what());
  } catch (...) {
    spdlog::error("sip: handling {} threw", nua_event_name(event));
  }
}
}  // namespace

void sip_service::impl::on_event(nua_event_t event, int status, const char* phrase, nua_handle_t* nh,
                                 const sip_t* sip, tagi_t tags[]) {
  switch (event) {
    case nua_i_invite: {
      if (auto c = find(nh)) on_reinvite(*c, sip);
      else on_invite(nh, sip);
      return;
    }
    case nua_i_cancel:
      if (auto c = find(nh)) c->end_reason = "cancelled";
      return;
    case nua_i_bye:
      if (auto c = find(nh)) c->end_reason = "hangup";
      return;
    case nua_i_state: {
      int state = -1;
      tl_gets(tags, NUTAG_CALLSTATE_REF(state), TAG_END());
      if (state == nua_callstate_terminated) terminated(nh, status >= 300 ? std::to_string(status) + " " + (phrase ? phrase : "") : "");
      return;
    }
    case nua_r_shutdown:
      if (status >= 200) shutdown_done = true;
      return;
    default:
      return;
  }
}

void sip_service::impl::on_invite(nua_handle_t* nh, const sip_t* sip) {
  const std::string call_id = sip && sip->sip_call_id && sip->sip_call_id->i_id ? sip->sip_call_id->i_id : "";
  if (stop_requested) return refuse_503(nh, "Shutting down");
  if (live >= cfg.max_calls) {
    spdlog::info("sip {}: refused, {} calls at once (sip.max_calls)", call_id, cfg.max_calls);
    return refuse_503(nh, "Maximum calls in progress");
  }
  if (!sip || !sip->sip_payload || !sip->sip_payload->pl_data || sip->sip_payload->pl_len == 0) {
    nua_respond(nh, SIP_488_NOT_ACCEPTABLE, SIPTAG_WARNING_STR("399 sluice \"an INVITE without an SDP offer\""),
                TAG_END());
    return;
  }
  auto body = split_invite_body(content_type_of(sip), std::string_view(sip->sip_payload->pl_data, sip->sip_payload->pl_len));
  if (!body) {
    spdlog::info("sip {}: body refused: {}", call_id, body.error().message);
    if (body.error().code == errc::unsupported)
      nua_respond(nh, SIP_415_UNSUPPORTED_MEDIA, SIPTAG_ACCEPT_STR("application/sdp, multipart/mixed"), TAG_END());
    else
      nua_respond(nh, SIP_400_BAD_REQUEST, SIPTAG_WARNING_STR(warning_of(body.error().message).c_str()), TAG_END());
    return;
  }
  auto offer = parse_offer(body->sdp, max_streams_per_call);
  if (!offer) {
    spdlog::info("sip {}: offer refused: {}", call_id, offer.error().message);
    nua_respond(nh, SIP_488_NOT_ACCEPTABLE, SIPTAG_WARNING_STR(warning_of(offer.error().message).c_str()), TAG_END());
    return;
  }
  // SIPREC (RFC 7866): the recorder names who sends each stream; broken metadata costs the
  // labels, not the recording.
  std::optional<siprec_metadata> siprec;
  std::string siprec_error;
  if (!body->rs_metadata.empty()) {
    auto m = parse_rs_metadata(body->rs_metadata);
    if (m) siprec = std::move(*m);
    else siprec_error = m.error().message;
  }

  auto c = std::make_shared<sip_call>();
  c->key = next_key++;
  c->nh = nh;
  c->offer = std::move(*offer);
  c->started_ms = steady_ms();
  c->session_id = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());

  calls::call_start start;
  start.source = body->rs_metadata.empty() ? "sip" : "siprec";
  start.external_id = call_id;
  nlohmann::json streams = nlohmann::json::array();
  const bool one = c->offer.accepted() == 1;
  int n = 0;
  for (const auto& s : c->offer.streams) {
    if (!s.accepted) continue;
    ++n;
    std::string label = siprec && !s.label.empty() ? siprec->channel_label(s.label) : std::string();
    if (label.empty()) label = !s.label.empty() ? s.label : one ? "caller" : "stream" + std::to_string(n);
    start.channel_labels.push_back(std::move(label));
    streams.push_back({{"codec", codec_name(s.codec.codec)}, {"payload_type", s.codec.payload_type},
                       {"remote", s.remote_address + ":" + std::to_string(s.remote_port)},
                       {"telephone_event", s.telephone_event_pt >= 0}});
  }
  start.metadata = {{"from", address_of(sip->sip_from)}, {"to", address_of(sip->sip_to)}, {"streams", streams}};
  if (sip->sip_user_agent && sip->sip_user_agent->g_string) start.metadata["user_agent"] = sip->sip_user_agent->g_string;
  if (siprec) start.metadata["siprec"] = siprec->to_json();
  if (!siprec_error.empty()) start.metadata["siprec_error"] = siprec_error;

  // RTP ports first: without them nothing is registered.
  jitter_buffer_config jc;
  jc.max_delay_ms = cfg.jitter_max_delay_ms;
  jc.max_fill_ms = cfg.max_fill_ms;
  std::vector<std::shared_ptr<rtp_receiver>> rtp;
  for (const auto& s : c->offer.streams) {
    if (!s.accepted) continue;
    jc.clock_rate = s.codec.clock_rate;
    auto r = rtp_receiver::open(ioc, cfg.host, pool, jc, s.codec, s.telephone_event_pt, {});
    if (!r) {
      spdlog::warn("sip {}: refused: {}", call_id, r.error().message);
      return refuse_503(nh, "No free RTP port");
    }
    rtp.push_back(std::move(*r));
  }
  c->id = registry->begin(start);
  c->completion = std::make_shared<call_completion>(registry, c->id, static_cast<int>(rtp.size()));
  calls[c->key] = c;
  by_handle[nh] = c->key;
  ++live;
  spdlog::info("sip {}: call {} from {} with {} stream(s)", call_id, c->id, address_of(sip->sip_from), rtp.size());

  // One bridge per stream; the receivers get their sinks (not started yet, so not racing).
  c->opens_pending = static_cast<int>(rtp.size());
  std::size_t i = 0;
  for (const auto& s : c->offer.streams) {
    if (!s.accepted) continue;
    actors::channel_request req;
    req.label = start.channel_labels[i];
    req.sample_rate = s.codec.sample_rate;
    req.codec = "pcm_s16le";
    bridge_args a;
    a.supervisor = engine->supervisor();
    a.request = req;
    a.call = c->completion;
    a.channel_index = static_cast<int>(i);
    a.on_open = [q = commands, key = c->key](bool ok, const std::string& reason) {
      post(q, [key, ok, reason](impl& self) { self.on_channel_open(key, ok, reason); });
    };
    auto bridge = spawn_channel_bridge(engine->system(), std::move(a));
    c->bridges.push_back(bridge);
    rtp_sinks sinks;
    sinks.audio = [bridge](std::vector<uint8_t> pcm) { caf::anon_send(bridge, actors::audio_atom::value, std::move(pcm)); };
    sinks.dtmf = [reg = registry, id = c->id, ch = static_cast<int>(i), t0 = c->started_ms](char digit, int ms) {
      calls::call_event ev;
      ev.type = "dtmf";
      ev.channel = ch;
      ev.at_ms = steady_ms() - t0;
      ev.data = {{"digit", std::string(1, digit)}, {"duration_ms", ms}};
      reg->event(id, std::move(ev));
    };
    rtp[i]->set_sinks(std::move(sinks));
    ++i;
  }
  c->rtp = std::move(rtp);
  nua_respond(nh, SIP_180_RINGING, TAG_END());
}

void sip_service::impl::on_reinvite(sip_call& c, const sip_t* sip) {
  // A re-INVITE without an offer asks for ours: the current answer again.
  if (!sip || !sip->sip_payload || sip->sip_payload->pl_len == 0 || !c.answered) {
    if (!c.answered) return (void)nua_respond(c.nh, SIP_491_REQUEST_PENDING, TAG_END());
    nua_respond(c.nh, SIP_200_OK, SIPTAG_CONTENT_TYPE_STR("application/sdp"), SIPTAG_PAYLOAD_STR(c.answer.c_str()),
                TAG_END());
    return;
  }
  auto body = split_invite_body(content_type_of(sip), std::string_view(sip->sip_payload->pl_data, sip->sip_payload->pl_len));
  if (body && !body->rs_metadata.empty()) {
    // RFC 7866 7.1.1: metadata updates come by re-INVITE.
    if (auto m = parse_rs_metadata(body->rs_metadata)) registry->update_metadata(c.id, {{"siprec", m->to_json()}});
  }
  auto offer = body ? parse_offer(body->sdp, max_streams_per_call)
                    : result<sdp_offer>(tl::unexpected(body.error()));
  // The streams' receivers and channels stay as they are: a new offer must keep their number
  // and codecs (hold, resume, a new remote address, a session refresh all do).
  bool same = offer.has_value() && offer->accepted() == c.offer.accepted();
  if (same) {
    std::size_t k = 0;
    for (const auto& s : offer->streams)
      if (s.accepted) {
        while (k < c.offer.streams.size() && !c.offer.streams[k].accepted) ++k;
        same = same && k < c.offer.streams.size() && c.offer.streams[k].codec.codec == s.codec.codec &&
               c.offer.streams[k].codec.payload_type == s.codec.payload_type;
        ++k;
      }
  }
  if (!same) {
    nua_respond(c.nh, SIP_488_NOT_ACCEPTABLE,
                SIPTAG_WARNING_STR("399 sluice \"a re-INVITE may not change the streams or codecs\""), TAG_END());
    return;
  }
  c.offer = std::move(*offer);
  std::vector<uint16_t> ports;
  for (const auto& r : c.rtp) ports.push_back(r->port());
  c.answer = render_answer(c.offer, cfg.host, ports, c.session_id, ++c.session_version);
  nua_respond(c.nh, SIP_200_OK, SIPTAG_CONTENT_TYPE_STR("application/sdp"), SIPTAG_PAYLOAD_STR(c.answer.c_str()),
              TAG_END());
  spdlog::info("sip call {}: re-INVITE answered (version {})", c.id, c.session_version);
}

void sip_service::impl::on_channel_open(uint64_t key, bool ok, const std::string& reason) {
  auto it = calls.find(key);
  if (it == calls.end()) return;  // over already (cancelled, ...)
  auto& c = *it->second;
  if (!ok && c.open_error.empty()) c.open_error = reason;
  if (--c.opens_pending > 0 || c.refused || c.answered) return;
  if (!c.open_error.empty()) {
    spdlog::warn("sip call {}: the engine refused its channels: {}", c.id, c.open_error);
    c.refused = true;
    c.end_reason = "refused: " + c.open_error;
    refuse_503(c.nh, "Engine full");
    return;
  }
  c.answer_at_ms = steady_ms() + cfg.answer_delay_ms;
  if (cfg.answer_delay_ms == 0) answer(c);
}

void sip_service::impl::answer(sip_call& c) {
  c.answer_at_ms.reset();
  std::vector<uint16_t> ports;
  for (const auto& r : c.rtp) ports.push_back(r->port());
  c.answer = render_answer(c.offer, cfg.host, ports, c.session_id, c.session_version);
  for (const auto& r : c.rtp) r->start();
  c.answered = true;
  nua_respond(c.nh, SIP_200_OK, SIPTAG_CONTENT_TYPE_STR("application/sdp"), SIPTAG_PAYLOAD_STR(c.answer.c_str()),
              TAG_END());
}

void sip_service::impl::terminated(nua_handle_t* nh, const std::string& status_reason) {
  auto c = find(nh);
  if (c) {
    std::string reason = c->end_reason;
    if (reason.empty()) reason = !status_reason.empty() && !c->answered ? "refused: " + status_reason : "hangup";
    spdlog::info("sip call {}: over ({})", c->id, reason);
    // Each receiver hands over what its jitter buffer still holds, then its channel gets its
    // end: the last utterance is finished, not cut.
    // The streams' RTP figures go into the call's metadata ("rtp", one object per stream) when
    // the last of them has stopped, before any channel gets its end (so before the call ends).
    struct rtp_report {
      std::mutex mu;
      nlohmann::json streams = nlohmann::json::array();
      std::size_t remaining = 0;
    };
    auto report = std::make_shared<rtp_report>();
    report->remaining = c->rtp.size();
    report->streams = nlohmann::json::array();
    for (std::size_t i = 0; i < c->rtp.size(); ++i) report->streams.push_back(nullptr);
    for (std::size_t i = 0; i < c->rtp.size(); ++i)
      c->rtp[i]->stop([bridges = c->bridges, r = c->rtp[i], report, i, reg = registry, id = c->id] {
        const auto& k = r->counters();
        const auto rate = r->sample_rate();
        std::lock_guard lock(report->mu);
        report->streams[i] = {{"datagrams", k.datagrams.load()},          {"not_rtp", k.not_rtp.load()},
                              {"foreign_source", k.foreign_source.load()}, {"lost", k.packets_lost.load()},
                              {"late", k.late.load()},                     {"reordered", k.reordered.load()},
                              {"max_hold_ms", k.max_hold_ms.load()},
                              {"concealed_ms", rate > 0 ? k.concealed_samples.load() * 1000 / rate : 0}};
        if (--report->remaining > 0) return;
        reg->update_metadata(id, {{"rtp", report->streams}});
        for (const auto& b : bridges) caf::anon_send(b, actors::end_atom::value);
      });
    c->completion->call_over(reason);
    by_handle.erase(nh);
    calls.erase(c->key);
    --live;
  }
  nua_handle_destroy(nh);
}

void sip_service::impl::check_calls() {
  const int64_t now = steady_ms();
  for (auto& [key, c] : calls) {
    if (c->answer_at_ms && now >= *c->answer_at_ms && !c->answered && !c->refused) {
      answer(*c);
      continue;
    }
    if (!c->answered || !c->end_reason.empty()) continue;
    int64_t last = 0;
    for (const auto& r : c->rtp) last = std::max(last, r->last_packet_ms());
    const char* why = nullptr;
    if (now - last > static_cast<int64_t>(cfg.rtp_timeout_s) * 1000) why = "rtp timeout";
    else if (now - c->started_ms > static_cast<int64_t>(cfg.max_call_s) * 1000) why = "max duration";
    if (!why) continue;
    spdlog::info("sip call {}: hanging up ({})", c->id, why);
    c->end_reason = why;
    nua_bye(c->nh, TAG_END());
  }
}

result<void> sip_service::impl::loop(std::promise<result<void>>& started) {
  su_init();
  root = su_root_create(this);
  if (!root) {
    started.set_value(fail(errc::internal, "sip: sofia-sip could not create its event loop"));
    su_deinit();
    return {};
  }
  const bool v6 = cfg.host.find(':') != std::string::npos;
  std::string url = "sip:" + (v6 ? "[" + cfg.host + "]" : cfg.host) + ":" + std::to_string(cfg.port);
  if (cfg.udp != cfg.tcp) url += cfg.udp ? ";transport=udp" : ";transport=tcp";
  nua = nua_create(root, event_callback, this, NUTAG_URL(url.c_str()), NUTAG_MEDIA_ENABLE(0), NUTAG_AUTOALERT(0),
                   SIPTAG_USER_AGENT_STR("sluice"), SIPTAG_SERVER_STR("sluice"),
                   // sofia's own extensions plus SIPREC: recorders send Require: siprec (RFC 7866
                   // 6.1.1), which sofia answers 420 Bad Extension unless it is listed here.
                   SIPTAG_SUPPORTED_STR("timer, 100rel, siprec"), TAG_NULL());
  if (!nua) {
    started.set_value(fail(errc::io, "sip: cannot listen on " + url));
    su_root_destroy(root);
    su_deinit();
    return {};
  }
  started.set_value(result<void>{});
  auto next_check = std::chrono::steady_clock::now() + periodic_check;
  while (!stop_requested) {
    su_root_step(root, loop_step_ms);
    run_commands();
    // Answers due (answer_delay_ms) are checked every step; timeouts once a second.
    const auto now = std::chrono::steady_clock::now();
    bool due = false;
    for (auto& [k, c] : calls) due = due || (c->answer_at_ms && steady_ms() >= *c->answer_at_ms);
    if (due || now >= next_check) {
      check_calls();
      if (now >= next_check) next_check = now + periodic_check;
    }
  }
  // Stop: hang up answered calls, refuse ringing ones, then shut the stack down.
  for (auto& [k, c] : calls) {
    if (!c->end_reason.empty()) continue;
    c->end_reason = "server stopping";
    if (c->answered) nua_bye(c->nh, TAG_END());
    else refuse_503(c->nh, "Shutting down");
  }
  const auto deadline = std::chrono::steady_clock::now() + stop_grace;
  while (!calls.empty() && std::chrono::steady_clock::now() < deadline) {
    su_root_step(root, loop_step_ms);
    run_commands();
  }
  // Calls whose peer never answered our BYE: end them here.
  while (!calls.empty()) terminated(calls.begin()->second->nh, "");
  nua_shutdown(nua);
  const auto shutdown_deadline = std::chrono::steady_clock::now() + stop_grace;
  while (!shutdown_done && std::chrono::steady_clock::now() < shutdown_deadline) su_root_step(root, loop_step_ms);
  nua_destroy(nua);
  su_root_destroy(root);
  su_deinit();
  return {};
}

result<std::unique_ptr<sip_service>> sip_service::start(actors::engine& engine,
                                                         std::shared_ptr<calls::call_registry> calls,
                                                         const config::sip_config& cfg) {
  boost::system::error_code ec;
  asio::ip::make_address(cfg.host, ec);
  if (ec) return fail(errc::invalid_config, "sip.host = \"" + cfg.host + "\" is not an IP address");
  std::unique_ptr<sip_service> s(new sip_service());
  s->impl_ = std::make_unique<impl>();
  auto& m = *s->impl_;
  m.cfg = cfg;
  m.engine = &engine;
  m.registry = std::move(calls);
  m.pool = std::make_shared<port_pool>(cfg.rtp_port_min, cfg.rtp_port_max);
  m.work.emplace(m.ioc.get_executor());
  m.io_thread = std::thread([&m] {
    for (;;) {
      try {
        m.ioc.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("sip: an RTP handler threw: {}; serving on", e.what());
      }
    }
  });
  // Shared: the loop may still be inside set_value when start() returns.
  auto started = std::make_shared<std::promise<result<void>>>();
  auto ready = started->get_future();
  m.sip_thread = std::thread([&m, started] { (void)m.loop(*started); });
  auto r = ready.get();
  if (!r) {
    m.sip_thread.join();
    m.work.reset();
    m.ioc.stop();
    m.io_thread.join();
    m.stopped = true;
    return tl::unexpected(r.error());
  }
  spdlog::info("sip: listening on {}:{} ({}{}{})", cfg.host, cfg.port, cfg.udp ? "udp" : "", cfg.udp && cfg.tcp ? "+" : "",
               cfg.tcp ? "tcp" : "");
  return s;
}

uint16_t sip_service::port() const { return static_cast<uint16_t>(impl_->cfg.port); }
int sip_service::live_calls() const { return impl_->live; }

void sip_service::stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
  impl_->stop_requested = true;
  if (impl_->sip_thread.joinable()) impl_->sip_thread.join();
  // Every receiver was stopped by its call's end; what remains on the io_context are their
  // last deliveries.
  impl_->work.reset();
  const auto deadline = std::chrono::steady_clock::now() + stop_grace;
  while (!impl_->ioc.stopped() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(loop_step_ms));
  impl_->ioc.stop();
  if (impl_->io_thread.joinable()) impl_->io_thread.join();
}

sip_service::~sip_service() { stop(); }

}  // namespace sluice::net::sip
