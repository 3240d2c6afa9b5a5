#include "net/rtsp/rtsp_session.hpp"

#include <chrono>
#include <cstdio>
#include <deque>
#include <optional>
#include <random>
#include <vector>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include "net/rtsp/rtp_audio_stream.hpp"
#include "net/rtsp/rtsp_auth.hpp"
#include "net/rtsp/rtsp_call.hpp"
#include "net/rtsp/rtsp_sdp.hpp"
#include "net/rtsp/rtsp_transport.hpp"
#include "net/rtsp/udp_rtcp.hpp"
#include "net/steady_time.hpp"

namespace sluice::net::rtsp {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;

namespace {
// The jitter buffers give up gaps and timeouts are checked on this tick.
constexpr auto tick_period = std::chrono::milliseconds(20);
constexpr std::size_t read_chunk = 16384;
constexpr std::size_t max_datagram = 65536;
constexpr std::size_t max_queued_writes = 8;
constexpr const char* methods_allowed = "OPTIONS, ANNOUNCE, SETUP, RECORD, TEARDOWN, GET_PARAMETER, SET_PARAMETER";

std::string new_session_id() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

// The Session header's id (before ";timeout=").
std::string session_of(const rtsp_request& r) {
  auto s = find_header(r.headers, "Session");
  if (!s) return {};
  return s->substr(0, s->find(';'));
}
}  // namespace

struct stream_slot {
  std::size_t media = 0;  // index into the description
  int channel = -1;       // the call's channel; -1: not transcribed (not audio we take)
  transport_spec transport;
  std::unique_ptr<rtp_audio_stream> audio;
  std::unique_ptr<udp::socket> socket;  // UDP transport
  uint16_t port = 0;                    // from the pool
  std::vector<uint8_t> buf;
  udp::endpoint from;
  std::shared_ptr<udp_rtcp> rtcp;  // UDP transport: the RTCP port (RTP port + 1)
};

struct rtsp_session::impl {
  enum class phase { connected, announced, recording, over };

  std::shared_ptr<rtsp_context> ctx;
  asio::strand<asio::io_context::executor_type> strand;
  tcp::socket socket;
  asio::steady_timer ticker;
  std::string peer;
  asio::ip::address peer_address;
  std::vector<uint8_t> in;
  std::vector<uint8_t> chunk = std::vector<uint8_t>(read_chunk);
  std::deque<std::string> out;
  bool writing = false, closed = false, close_after_write = false, counted_session = false;
  phase state = phase::connected;
  std::string session_id, url, path;
  rtsp_description description;
  std::vector<std::unique_ptr<stream_slot>> slots;
  std::unique_ptr<rtsp_call> call;
  std::weak_ptr<rtsp_session> owner;  // set by start(): keeps the session alive across a write
  long long record_cseq = -1;
  int64_t last_activity_ms = 0, record_started_ms = 0, next_report_ms = 0;

  impl(tcp::socket s, std::shared_ptr<rtsp_context> c)
      : ctx(std::move(c)), strand(asio::make_strand(*ctx->ioc)), socket(std::move(s)), ticker(strand) {
    boost::system::error_code ec;
    const auto ep = socket.remote_endpoint(ec);
    if (!ec) {
      peer_address = ep.address();
      peer = ep.address().to_string() + ":" + std::to_string(ep.port());
    }
  }

  std::string tag() const { return session_id.empty() ? peer : session_id; }

  void send(std::string bytes) {
    out.push_back(std::move(bytes));
    if (!writing) do_write(owner.lock());
  }
  void do_write(std::shared_ptr<rtsp_session> self);
  void reply(const rtsp_request& r, int status, header_list headers = {}, std::string body = {});
  void refuse(const rtsp_request& r, int status, const std::string& why, header_list headers = {}) {
    spdlog::info("rtsp {}: {} {} answered {} ({})", tag(), r.method, r.uri, status, why);
    headers.emplace_back("Content-Type", "text/plain");
    reply(r, status, std::move(headers), why + "\r\n");
  }
  std::string session_header() const {
    return session_id + ";timeout=" + std::to_string(ctx->cfg.session_timeout_s);
  }

  // With API keys: the request's key is valid and may stream, or it has been answered 401/403.
  bool admit(const rtsp_request& r);
  std::optional<auth::principal> who;  // the key's principal, once a request carried a valid one
  std::shared_ptr<void> enrolment;     // with ctx->key_streams, once `who` is set

  void on_bytes(std::shared_ptr<rtsp_session> self);
  void handle(const rtsp_request& r, const std::shared_ptr<rtsp_session>& self);
  void on_announce(const rtsp_request& r);
  void on_setup(const rtsp_request& r, const std::shared_ptr<rtsp_session>& self);
  void on_record(const rtsp_request& r, const std::shared_ptr<rtsp_session>& self);
  void on_record_ready(bool ok, const std::string& reason);
  void on_rtp(stream_slot& s, std::span<const uint8_t> bytes);
  void do_udp_receive(stream_slot& s, std::shared_ptr<rtsp_session> self);
  void arm_ticker(std::shared_ptr<rtsp_session> self);
  // An RTCP receiver report on every recording stream: interleaved over TCP, by UDP otherwise.
  void send_reports();
  void end_call(const std::string& reason);
  void close(const std::string& reason);
};

void rtsp_session::impl::do_write(std::shared_ptr<rtsp_session> self) {
  if (out.empty() || closed) {
    writing = false;
    if (close_after_write && !closed) close("refused");
    return;
  }
  writing = true;
  // `self` keeps the session alive across the write.
  asio::async_write(socket, asio::buffer(out.front()),
                    asio::bind_executor(strand, [this, self](boost::system::error_code ec, std::size_t) {
                      if (ec) {
                        writing = false;
                        close("connection closed");
                        return;
                      }
                      out.pop_front();
                      do_write(self);
                    }));
}

void rtsp_session::impl::reply(const rtsp_request& r, int status, header_list headers, std::string body) {
  headers.emplace_back("Server", "sluice");
  send(render_response(status, r.cseq, headers, body));
}

void rtsp_session::impl::on_bytes(std::shared_ptr<rtsp_session> self) {
  const auto limits = ctx->limits();
  std::size_t at = 0;
  while (!closed && at < in.size()) {
    auto f = parse_request(std::span<const uint8_t>(in.data() + at, in.size() - at), limits);
    if (f.kind == frame_kind::need_more) break;
    if (f.kind == frame_kind::error) {
      spdlog::info("rtsp {}: unreadable request, answered {} and closing: {}", tag(), f.error_status, f.error_reason);
      rtsp_request none;
      reply(none, f.error_status, {{"Content-Type", "text/plain"}}, f.error_reason + "\r\n");
      close_after_write = true;
      in.clear();
      return;
    }
    at += f.consumed;
    last_activity_ms = steady_ms();
    if (f.kind == frame_kind::interleaved) {
      for (auto& s : slots) {
        if (!s->transport.tcp) continue;
        if (s->transport.rtp_channel == f.channel) on_rtp(*s, f.payload);
        else if (s->transport.rtcp_channel == f.channel && state == phase::recording && s->audio)
          s->audio->on_rtcp(f.payload, steady_us());
      }
      // Frames of unknown channels are dropped.
      continue;
    }
    handle(f.request, self);
  }
  in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(std::min(at, in.size())));
}

bool rtsp_session::impl::admit(const rtsp_request& r) {
  // A locked-out address is answered before its key is looked at, as over HTTP
  // (net/auth/failure_limiter.hpp): a guesser learns nothing while it waits.
  const auto& limiter = ctx->auth_failures;
  const std::string ip =
      !limiter ? std::string() : peer_address.is_unspecified() ? std::string("unknown") : peer_address.to_string();
  if (limiter)
    if (const auto wait = limiter->retry_after(ip)) {
      close_after_write = true;
      refuse(r, 503, limiter->lockout_message(*wait), {{"Retry-After", std::to_string(*wait)}});
      return false;
    }
  const auto h = find_header(r.headers, "Authorization");
  const auto creds = h ? basic_credentials(*h) : std::nullopt;
  // rtsp://user:<key>@host/name, or rtsp://<key>@host/name (then the password is empty).
  const std::string key = creds ? (creds->second.empty() ? creds->first : creds->second) : std::string();
  auto p = key.empty() ? std::nullopt : ctx->authenticate(key);
  if (!p) {
    // Only a key that was presented and is not valid counts (a missing one is a first try).
    if (limiter && !key.empty() && limiter->record_failure(ip))
      spdlog::warn("rtsp {}: {} is locked out after too many invalid API keys (auth.max_failures)", tag(), ip);
    refuse(r, 401, h ? "the API key is not valid" : "an API key is required (Authorization: Basic, the key as password)",
           {{"WWW-Authenticate", "Basic realm=\"sluice\""}});
    return false;
  }
  if (!p->allows(auth::scope::stream)) {
    refuse(r, 403, "the API key may not stream (scope stream)");
    return false;
  }
  if (who && who->tenant != p->tenant) {
    refuse(r, 403, "another tenant's key on this connection");
    return false;
  }
  who = std::move(*p);
  return true;
}

void rtsp_session::impl::handle(const rtsp_request& r, const std::shared_ptr<rtsp_session>& self) {
  spdlog::debug("rtsp {}: {} {}", tag(), r.method, r.uri);
  if (r.cseq < 0) return refuse(r, 400, "a CSeq header with a number is required");
  if (auto req = find_header(r.headers, "Require"))
    return refuse(r, 551, "no option is supported", {{"Unsupported", *req}});
  const auto& m = r.method;
  if (m == "OPTIONS") return reply(r, 200, {{"Public", methods_allowed}});
  if (ctx->authenticate && !admit(r)) return;
  if (who && !enrolment && ctx->key_streams)
    enrolment = ctx->key_streams->enrol(*who, auth::scope::stream,
                                        [w = std::weak_ptr<rtsp_session>(self), gate = ctx->gate] {
                                          std::lock_guard lock(gate->mu);
                                          if (!gate->open) return;
                                          if (auto s = w.lock()) s->stop("error: key_revoked");
                                        });
  if (m == "GET_PARAMETER" || m == "SET_PARAMETER") {
    // Keep-alives: answered, and they count as activity (on_bytes took note).
    header_list h;
    if (!session_id.empty()) h.emplace_back("Session", session_header());
    return reply(r, 200, h);
  }
  if (m == "ANNOUNCE") return on_announce(r);
  if (m == "SETUP") return on_setup(r, self);
  if (m == "RECORD") return on_record(r, self);
  if (m == "TEARDOWN") {
    if (state == phase::connected) return refuse(r, 455, "nothing to tear down");
    if (!session_id.empty() && session_of(r) != session_id) return refuse(r, 454, "no such session");
    end_call("teardown");
    return reply(r, 200, {{"Session", session_header()}});
  }
  if (m == "DESCRIBE" || m == "PLAY" || m == "PAUSE" || m == "REDIRECT")
    return refuse(r, 405, "this endpoint records pushed streams (ANNOUNCE, SETUP, RECORD)", {{"Allow", methods_allowed}});
  refuse(r, 501, "unknown method");
}

void rtsp_session::impl::on_announce(const rtsp_request& r) {
  if (state != phase::connected) return refuse(r, 455, "a stream was announced on this connection already");
  const auto ct = find_header(r.headers, "Content-Type");
  if (!ct || ct->rfind("application/sdp", 0) != 0) return refuse(r, 415, "ANNOUNCE needs an application/sdp body");
  const auto p = url_path(r.uri);
  if (p.empty() || p == "/") return refuse(r, 404, "name the stream: rtsp://host:port/<name>");
  auto d = parse_description(r.body, r.uri, static_cast<std::size_t>(ctx->cfg.max_media));
  if (!d) return refuse(r, 415, d.error().message);
  if (ctx->sessions.fetch_add(1) >= ctx->cfg.max_sessions) {
    --ctx->sessions;
    return refuse(r, 503, "too many sessions (rtsp.max_sessions = " + std::to_string(ctx->cfg.max_sessions) + ")");
  }
  counted_session = true;
  description = std::move(*d);
  url = r.uri;
  path = p;
  session_id = new_session_id();
  state = phase::announced;
  spdlog::info("rtsp {}: {} announced from {} ({} audio stream(s))", tag(), path, peer, description.taken());
  reply(r, 200, {{"Session", session_header()}});
}

void rtsp_session::impl::on_setup(const rtsp_request& r, const std::shared_ptr<rtsp_session>& self) {
  if (state != phase::announced) return refuse(r, 455, state == phase::connected ? "ANNOUNCE first" : "already recording");
  if (const auto s = session_of(r); !s.empty() && s != session_id) return refuse(r, 454, "no such session");
  // The stream: its control URL; a client that names the announced URL itself means the only one.
  std::optional<std::size_t> which;
  for (std::size_t i = 0; i < description.media.size(); ++i)
    if (same_url(r.uri, description.media[i].control)) which = i;
  if (!which && description.media.size() == 1 && same_url(r.uri, url)) which = 0;
  if (!which) return refuse(r, 404, "no stream with this control URL was announced");
  for (const auto& s : slots)
    if (s->media == *which) return refuse(r, 455, "this stream is set up already");
  const auto th = find_header(r.headers, "Transport");
  auto t = th ? choose_transport(*th) : std::nullopt;
  if (!t) return refuse(r, 461, "RTP/AVP unicast over TCP (interleaved) or UDP (client_port) only");
  auto slot = std::make_unique<stream_slot>();
  slot->media = *which;
  slot->transport = *t;
  if (t->tcp) {
    // RTP and RTCP each need a channel of their own, shared with no other stream's.
    if (t->rtp_channel == t->rtcp_channel) return refuse(r, 461, "RTP and RTCP need two interleaved channels");
    for (const auto& s : slots) {
      if (!s->transport.tcp) continue;
      for (const int mine : {s->transport.rtp_channel, s->transport.rtcp_channel})
        if (mine == t->rtp_channel || mine == t->rtcp_channel)
          return refuse(r, 461, "interleaved channels in use by another stream");
    }
  } else {
    // A port of the pool that binds; one taken by another program is skipped.
    boost::system::error_code ec;
    const auto host = asio::ip::make_address(ctx->cfg.host, ec);
    for (std::size_t tries = 0; !ec && tries < ctx->pool->capacity(); ++tries) {
      auto port = ctx->pool->acquire();
      if (!port) break;
      auto sock = std::make_unique<udp::socket>(strand);
      boost::system::error_code bec;
      sock->open(host.is_v6() ? udp::v6() : udp::v4(), bec);
      if (!bec) sock->bind(udp::endpoint(host, *port), bec);
      if (!bec) {
        slot->socket = std::move(sock);
        slot->port = *port;
        break;
      }
      ctx->pool->release(*port);
    }
    if (!slot->socket) return refuse(r, 503, "no free RTP port (rtsp.rtp_port_min..rtp_port_max)");
    slot->transport.server_rtp_port = slot->port;
    slot->buf.resize(max_datagram);
    if (ctx->cfg.rtcp_interval_ms > 0) {
      std::string why;
      // Only the peer of this RTSP connection may send its RTCP, as for its RTP.
      slot->rtcp = udp_rtcp::open(strand, host, static_cast<uint16_t>(slot->port + 1), peer_address, why);
      if (!slot->rtcp) {
        spdlog::warn("rtsp {}: no RTCP for a stream: {}", tag(), why);
      } else {
        if (t->client_rtcp_port != 0) slot->rtcp->set_peer(udp::endpoint(peer_address, t->client_rtcp_port));
        stream_slot* sp = slot.get();
        slot->rtcp->receive([this, sp, self](std::span<const uint8_t> bytes) {
          if (closed || state != phase::recording || !sp->audio) return;
          last_activity_ms = steady_ms();
          sp->audio->on_rtcp(bytes, steady_us());
        });
      }
    }
  }
  auto& reply_t = slot->transport;
  slots.push_back(std::move(slot));
  if (slots.back()->socket) do_udp_receive(*slots.back(), self);
  reply(r, 200, {{"Session", session_header()}, {"Transport", render_transport(reply_t)}});
}

void rtsp_session::impl::on_record(const rtsp_request& r, const std::shared_ptr<rtsp_session>& self) {
  if (state != phase::announced || slots.empty())
    return refuse(r, 455, state == phase::recording ? "already recording" : "SETUP a stream first");
  if (session_of(r) != session_id) return refuse(r, 454, "no such session");
  calls::call_start start;
  start.source = "rtsp";
  start.tenant = who ? who->tenant : ctx->cfg.tenant;
  start.external_id = path;
  std::vector<rtsp_media> media;
  nlohmann::json streams = nlohmann::json::array();
  for (auto& s : slots) {
    const auto& m = description.media[s->media];
    if (!m.taken) continue;
    s->channel = static_cast<int>(media.size());
    media.push_back(m);
    streams.push_back({{"codec", codec_name(m.codec)}, {"payload_type", m.payload_type}, {"sample_rate", m.sample_rate},
                       {"channels", m.channels}, {"transport", s->transport.tcp ? "tcp" : "udp"}});
    const int ch = s->channel;
    s->audio = std::make_unique<rtp_audio_stream>(m, ctx->jitter(), [this, ch](std::vector<uint8_t> pcm) {
      if (call) call->audio(static_cast<std::size_t>(ch), std::move(pcm));
    }, ctx->cfg.max_stream_kbps);
  }
  if (media.empty()) return refuse(r, 415, "none of the streams set up is audio sluice takes");
  for (std::size_t i = 0; i < media.size(); ++i)
    start.channel_labels.push_back(media.size() == 1 ? "mono" : "stream" + std::to_string(i + 1));
  start.metadata = {{"url", url}, {"peer", peer}, {"streams", streams}};
  if (auto ua = find_header(r.headers, "User-Agent")) start.metadata["user_agent"] = *ua;
  state = phase::recording;
  record_cseq = r.cseq;
  record_started_ms = steady_ms();
  if (ctx->cfg.rtcp_interval_ms > 0) next_report_ms = record_started_ms + report_delay_ms(ctx->cfg.rtcp_interval_ms);
  std::weak_ptr<rtsp_session> weak = self;
  call = std::make_unique<rtsp_call>(*ctx->engine, ctx->registry, start, media,
                                     [weak, strand = strand](bool ok, const std::string& reason) {
                                       asio::post(strand, [weak, ok, reason] {
                                         if (auto s = weak.lock()) s->impl_->on_record_ready(ok, reason);
                                       });
                                     });
  spdlog::info("rtsp {}: RECORD {}: call {}", tag(), path, call->id());
}

void rtsp_session::impl::on_record_ready(bool ok, const std::string& reason) {
  if (closed || record_cseq < 0) return;
  rtsp_request r;
  r.cseq = record_cseq;
  record_cseq = -1;
  if (!ok) {
    end_call("refused: " + reason);
    return refuse(r, 503, "the engine refused the call's channels: " + reason);
  }
  reply(r, 200, {{"Session", session_header()}});
}

void rtsp_session::impl::on_rtp(stream_slot& s, std::span<const uint8_t> bytes) {
  if (state != phase::recording || !s.audio) return;
  s.audio->on_packet(bytes, steady_us());
}

void rtsp_session::impl::do_udp_receive(stream_slot& s, std::shared_ptr<rtsp_session> self) {
  s.socket->async_receive_from(asio::buffer(s.buf), s.from,
                               asio::bind_executor(strand, [this, self, &s](boost::system::error_code ec, std::size_t n) {
                                 if (ec || closed || !s.socket) return;
                                 // Only the peer of this RTSP connection may send its RTP.
                                 if (s.from.address() == peer_address) {
                                   last_activity_ms = steady_ms();
                                   on_rtp(s, std::span<const uint8_t>(s.buf.data(), n));
                                 }
                                 do_udp_receive(s, self);
                               }));
}

void rtsp_session::impl::arm_ticker(std::shared_ptr<rtsp_session> self) {
  ticker.expires_after(tick_period);
  ticker.async_wait([this, self](boost::system::error_code ec) {
    if (ec || closed) return;
    const auto now = steady_ms();
    for (auto& s : slots)
      if (s->audio && state == phase::recording) s->audio->tick(now);
    if (now - last_activity_ms > int64_t{ctx->cfg.session_timeout_s} * 1000) {
      spdlog::info("rtsp {}: no request or RTP for {} s: ending", tag(), ctx->cfg.session_timeout_s);
      return close("session timeout");
    }
    if (state == phase::recording && ctx->cfg.rtcp_interval_ms > 0 && now >= next_report_ms) {
      send_reports();
      next_report_ms = now + report_delay_ms(ctx->cfg.rtcp_interval_ms);
    }
    if (state == phase::recording && now - record_started_ms > int64_t{ctx->cfg.max_call_s} * 1000) {
      spdlog::info("rtsp {}: longer than rtsp.max_call_s: ending", tag());
      end_call("max duration");
    }
    arm_ticker(self);
  });
}

void rtsp_session::impl::send_reports() {
  // A pusher that never reads its connection (RTSP clients that only write) must not make our
  // queue grow: a report is skipped while earlier writes are still queued.
  if (out.size() > max_queued_writes) return;
  const auto now = steady_us();
  for (auto& s : slots)
    if (s->audio)
      send_report(*s->audio, s->transport, s->rtcp.get(), now, "sluice@" + ctx->cfg.host, false,
                  [this](std::string frame) { send(std::move(frame)); });
}

void rtsp_session::impl::end_call(const std::string& reason) {
  if (state == phase::over) return;
  const bool recording = state == phase::recording;
  state = phase::over;
  nlohmann::json stats = nlohmann::json::array();
  for (auto& s : slots) {
    if (s->socket) {
      boost::system::error_code ignored;
      s->socket->close(ignored);
    }
    if (s->rtcp) s->rtcp->close();
    if (s->audio && recording) {
      s->audio->flush();  // what the jitter buffer holds is part of the call
      stats.push_back(s->audio->stats());
    }
  }
  if (call) {
    spdlog::info("rtsp {}: call {} over ({})", tag(), call->id(), reason);
    call->end(reason, stats);
  }
  // The UDP sockets' pending receives finish (cancelled) on this strand before the ports are
  // reused by another session, which waits for the pool anyway.
  for (auto& s : slots)
    if (s->port) {
      ctx->pool->release(s->port);
      s->port = 0;
    }
  if (counted_session) {
    counted_session = false;
    --ctx->sessions;
  }
}

void rtsp_session::impl::close(const std::string& reason) {
  if (closed) return;
  end_call(reason);
  closed = true;
  boost::system::error_code ignored;
  ticker.cancel();
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
  --ctx->connections;
}

rtsp_session::rtsp_session(tcp::socket socket, std::shared_ptr<rtsp_context> ctx)
    : impl_(std::make_unique<impl>(std::move(socket), std::move(ctx))) {}

rtsp_session::~rtsp_session() = default;

void rtsp_session::start() {
  asio::post(impl_->strand, [self = shared_from_this()] {
    auto& m = *self->impl_;
    m.owner = self;
    m.last_activity_ms = steady_ms();
    m.arm_ticker(self);
    // The read loop: each chunk is appended and parsed; the buffer stays bounded because
    // parse_request refuses headers and bodies over their limits and '$' frames are <= 64 KiB.
    struct reader {
      static void next(std::shared_ptr<rtsp_session> s) {
        auto& im = *s->impl_;
        if (im.closed) return;
        im.socket.async_read_some(asio::buffer(im.chunk),
                                  asio::bind_executor(im.strand, [s](boost::system::error_code ec, std::size_t n) {
                                    auto& i = *s->impl_;
                                    if (i.closed) return;
                                    if (ec) return i.close("connection closed");
                                    i.in.insert(i.in.end(), i.chunk.begin(), i.chunk.begin() + static_cast<long>(n));
                                    try {
                                      i.on_bytes(s);
                                    } catch (const std::exception& e) {
                                      spdlog::error("rtsp {}: handling a request threw: {}", i.tag(), e.what());
                                      return i.close("error: " + std::string(e.what()));
                                    }
                                    if (!i.close_after_write) next(s);
                                  }));
      }
    };
    reader::next(self);
  });
}

void rtsp_session::stop(const std::string& reason) {
  asio::post(impl_->strand, [self = shared_from_this(), reason] { self->impl_->close(reason); });
}

}  // namespace sluice::net::rtsp
