#include "net/rtsp/rtsp_pull.hpp"

#include <chrono>
#include <cstdlib>
#include <deque>
#include <optional>
#include <random>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
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
#include "net/hex.hpp"
#include "net/steady_time.hpp"

namespace sluice::net::rtsp {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;

namespace {
constexpr auto tick_period = std::chrono::milliseconds(20);
constexpr std::size_t read_chunk = 16384;
constexpr std::size_t max_datagram = 65536;
constexpr std::size_t max_queued_writes = 8;
constexpr const char* default_port = "554";  // RFC 2326 3.2
constexpr int default_server_timeout_s = 60;  // RFC 2326 12.37

// `bytes` random bytes in hex (a Digest client nonce: unpredictable, not secret).
std::string random_hex(std::size_t bytes) {
  std::random_device rd;
  std::vector<unsigned char> b(bytes);
  for (auto& x : b) x = static_cast<unsigned char>(rd() & 0xffu);
  return to_hex(b.data(), b.size());
}

}  // namespace

struct rtsp_pull::impl {
  struct slot {
    std::size_t media = 0;
    int channel = -1;
    transport_spec transport;
    std::unique_ptr<rtp_audio_stream> audio;
    std::unique_ptr<udp::socket> socket;
    uint16_t port = 0;
    std::vector<uint8_t> buf;
    udp::endpoint from;
    std::shared_ptr<udp_rtcp> rtcp;  // udp: the RTCP port (RTP port + 1)
  };
  enum class phase { idle, describing, setting_up, playing };

  std::shared_ptr<rtsp_context> ctx;
  // Credentials of the configured URL. They are never sent in a request line, logged or stored:
  // `url` is the URL without them.
  url_credentials creds;
  std::string url, host, port, path;
  asio::strand<asio::io_context::executor_type> strand;
  tcp::socket socket;
  tcp::resolver resolver;
  asio::steady_timer ticker, retry;
  std::weak_ptr<rtsp_pull> owner;
  uint64_t gen = 0;  // connection generation: handlers of an older connection do nothing
  bool stopped = false;
  phase state = phase::idle;
  std::vector<uint8_t> in, chunk = std::vector<uint8_t>(read_chunk);
  std::deque<std::string> out;
  bool writing = false;
  long long cseq = 0, pending_cseq = -1;
  std::string pending_method;
  rtsp_description desc;
  std::vector<std::size_t> to_setup;
  std::size_t setup_next = 0;
  bool try_udp = false;
  std::string session_id, play_url;
  int server_timeout_s = default_server_timeout_s;
  std::vector<std::unique_ptr<slot>> slots;
  std::unique_ptr<rtsp_call> call;
  int64_t backoff_ms = 0, last_heard_ms = 0, last_keepalive_ms = 0, next_report_ms = 0;
  // The server's last challenge (a 401), answered on every request after it.
  auth_challenge challenge;
  unsigned nonce_count = 0;
  std::string cnonce;  // the client nonce for qop=auth, new with each challenge
  bool auth_retried = false;  // the pending request is already the answer to a 401
  header_list pending_headers;
  std::string pending_uri;

  impl(std::shared_ptr<rtsp_context> c, std::string u)
      : ctx(std::move(c)), creds(split_credentials(u)), url(creds.wire), strand(asio::make_strand(*ctx->ioc)), socket(strand), resolver(strand),
        ticker(strand), retry(strand) {
    backoff_ms = ctx->cfg.pull_retry_min_ms;
    // rtsp://[user@]host[:port]/path
    auto rest = url.substr(7);
    const auto slash = rest.find('/');
    auto authority = rest.substr(0, slash);
    path = slash == std::string::npos ? "/" : rest.substr(slash);
    if (const auto at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
    const auto colon = authority.rfind(':');
    if (!authority.empty() && authority.front() == '[') {
      const auto close = authority.find(']');
      host = authority.substr(1, close - 1);
      port = close + 1 < authority.size() && authority[close + 1] == ':' ? authority.substr(close + 2) : default_port;
    } else if (colon != std::string::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
    } else {
      host = authority;
      port = default_port;
    }
  }

  void connect();
  void read(uint64_t g);
  void on_bytes();
  void on_response(const rtsp_response& r);
  void on_server_request(const rtsp_request& r);
  void request(const std::string& method, const std::string& uri, header_list h);
  void send_pending();  // (again) the pending request, with credentials when challenged
  // A 401 to the pending request: true when it was sent again with credentials.
  bool answer_challenge(const rtsp_response& r);
  void send(std::string bytes);
  void do_write(uint64_t g);
  void setup_next_stream();
  void start_call();
  void on_tick(uint64_t g);
  void do_udp_receive(slot& s, uint64_t g);
  // RTCP receiver reports on every playing stream (with a BYE when the pull stops). Over TCP
  // the frames are queued for writing, or appended to `direct` when given.
  void send_reports(bool bye, std::string* direct = nullptr);
  std::string cname() const { return "sluice@" + ctx->cfg.host; }
  void fail(const std::string& reason);
  void disconnect(const std::string& reason);
};

void rtsp_pull::impl::connect() {
  if (stopped) return;
  const auto g = ++gen;
  state = phase::describing;
  last_heard_ms = steady_ms();
  resolver.async_resolve(host, port, [this, g, self = owner.lock()](boost::system::error_code ec,
                                                                     tcp::resolver::results_type eps) {
    if (g != gen || stopped) return;
    if (ec) return fail("cannot resolve " + host + ": " + ec.message());
    asio::async_connect(socket, eps, [this, g, self](boost::system::error_code ec2, const tcp::endpoint&) {
      if (g != gen || stopped) return;
      if (ec2) return fail("cannot connect: " + ec2.message());
      read(g);
      request("DESCRIBE", url, {{"Accept", "application/sdp"}});
    });
  });
  ticker.expires_after(tick_period);
  ticker.async_wait([this, g, self = owner.lock()](boost::system::error_code ec) {
    if (!ec) on_tick(g);
  });
}

void rtsp_pull::impl::read(uint64_t g) {
  socket.async_read_some(asio::buffer(chunk), [this, g, self = owner.lock()](boost::system::error_code ec, std::size_t n) {
    if (g != gen || stopped) return;
    if (ec) return fail("server gone: " + ec.message());
    in.insert(in.end(), chunk.begin(), chunk.begin() + static_cast<long>(n));
    on_bytes();
    if (g == gen && !stopped) read(g);
  });
}

void rtsp_pull::impl::on_bytes() {
  const auto limits = ctx->limits();
  const auto g = gen;
  std::size_t at = 0;
  while (g == gen && at < in.size()) {
    const std::span<const uint8_t> rest(in.data() + at, in.size() - at);
    auto f = parse_response(rest, limits);
    if (f.kind == frame_kind::error) {
      // A server may send requests too (RTSP 2.0 TEARDOWN, GET_PARAMETER keep-alives).
      auto q = parse_request(rest, limits);
      if (q.kind == frame_kind::request) {
        at += q.consumed;
        on_server_request(q.request);
        continue;
      }
      if (q.kind == frame_kind::need_more) break;
      return fail("unreadable reply: " + f.error_reason);
    }
    if (f.kind == frame_kind::need_more) break;
    at += f.consumed;
    last_heard_ms = steady_ms();
    if (f.kind == frame_kind::interleaved) {
      if (state != phase::playing) continue;
      for (auto& s : slots) {
        if (!s->audio || !s->transport.tcp) continue;
        if (s->transport.rtp_channel == f.channel) s->audio->on_packet(f.payload, steady_us());
        else if (s->transport.rtcp_channel == f.channel) s->audio->on_rtcp(f.payload, steady_us());
      }
      continue;
    }
    on_response(f.response);
  }
  if (g == gen) in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(std::min(at, in.size())));
}

void rtsp_pull::impl::on_server_request(const rtsp_request& r) {
  send(render_response(200, r.cseq, {}));
  if (r.method == "TEARDOWN") {
    spdlog::info("rtsp pull {}: the server tore the stream down", url);
    disconnect("teardown by server");
    stopped = true;
  }
}

void rtsp_pull::impl::request(const std::string& method, const std::string& uri, header_list h) {
  pending_method = method;
  pending_uri = uri;
  pending_headers = h;
  auth_retried = false;
  send_pending();
}

void rtsp_pull::impl::send_pending() {
  pending_cseq = ++cseq;
  auto h = pending_headers;
  const auto& method = pending_method;
  const auto& uri = pending_uri;
  if (challenge.scheme != auth_scheme::none) {
    ++nonce_count;
    h.emplace_back("Authorization", authorization(challenge, creds.user, creds.password, method, uri, nonce_count,
                                                  cnonce));
  }
  h.emplace_back("User-Agent", "sluice");
  if (!session_id.empty()) h.emplace_back("Session", session_id);
  send(render_request(method, uri, pending_cseq, h));
}

void rtsp_pull::impl::send(std::string bytes) {
  out.push_back(std::move(bytes));
  if (!writing) do_write(gen);
}

void rtsp_pull::impl::do_write(uint64_t g) {
  if (out.empty() || g != gen) {
    writing = false;
    return;
  }
  writing = true;
  asio::async_write(socket, asio::buffer(out.front()), [this, g, self = owner.lock()](boost::system::error_code ec, std::size_t) {
    if (g != gen) return;
    writing = false;
    if (ec) return fail("server gone: " + ec.message());
    out.pop_front();
    do_write(g);
  });
}

bool rtsp_pull::impl::answer_challenge(const rtsp_response& r) {
  const auto c = parse_challenge(r.headers);
  if (!creds.has_credentials()) {
    fail(pending_method + " needs credentials (401): give them in the URL, rtsp://user:password@host/path");
    return false;
  }
  if (c.scheme == auth_scheme::none) {
    fail(pending_method + " answered 401 with no challenge sluice answers (Digest MD5 or Basic)");
    return false;
  }
  if (auth_retried && !c.stale) {
    fail(pending_method + " answered 401 again: the server refused the URL's credentials");
    return false;
  }
  if (c.scheme == auth_scheme::basic && challenge.scheme == auth_scheme::none)
    spdlog::warn("rtsp pull {}: the server asks for Basic authentication: the password crosses the network in clear", url);
  challenge = c;
  nonce_count = 0;
  cnonce = random_hex(8);
  auth_retried = true;
  send_pending();
  return true;
}

void rtsp_pull::impl::on_response(const rtsp_response& r) {
  if (r.cseq != pending_cseq) return;  // a keep-alive's late answer, or noise
  if (r.status == 401) {
    pending_cseq = -1;
    answer_challenge(r);
    return;
  }
  const auto method = pending_method;
  pending_cseq = -1;
  if (method == "DESCRIBE") {
    if (r.status != 200) return fail("DESCRIBE answered " + std::to_string(r.status) + " " + r.reason);
    auto base = find_header(r.headers, "Content-Base");
    if (!base) base = find_header(r.headers, "Content-Location");
    auto d = parse_description(r.body, base ? *base : url, static_cast<std::size_t>(ctx->cfg.max_media));
    if (!d) return fail(d.error().message);
    desc = std::move(*d);
    play_url = base ? *base : url;
    to_setup.clear();
    for (std::size_t i = 0; i < desc.media.size(); ++i)
      if (desc.media[i].taken) to_setup.push_back(i);
    setup_next = 0;
    try_udp = false;
    state = phase::setting_up;
    return setup_next_stream();
  }
  if (method == "SETUP") {
    if (r.status == 461 && !try_udp) {
      spdlog::info("rtsp pull {}: no RTP over TCP (461): trying UDP", url);
      try_udp = true;
      return setup_next_stream();
    }
    if (r.status != 200) return fail("SETUP answered " + std::to_string(r.status) + " " + r.reason);
    if (auto s = find_header(r.headers, "Session")) {
      session_id = s->substr(0, s->find(';'));
      if (const auto t = s->find("timeout="); t != std::string::npos) {
        const int v = std::atoi(s->c_str() + t + 8);
        if (v > 0) server_timeout_s = v;
      }
    }
    auto& sl = *slots.back();
    if (auto th = find_header(r.headers, "Transport")) {
      if (auto t = parse_transport(*th); t && t->tcp == sl.transport.tcp && t->tcp) {
        sl.transport.rtp_channel = t->rtp_channel;
        sl.transport.rtcp_channel = t->rtcp_channel;
      } else if (t && !t->tcp && sl.rtcp && t->server_rtcp_port != 0) {
        // Our reports go to the server's RTCP port until its own RTCP shows where it listens.
        boost::system::error_code ec;
        const auto server = socket.remote_endpoint(ec);
        if (!ec) sl.rtcp->set_peer(udp::endpoint(server.address(), t->server_rtcp_port));
      }
    }
    ++setup_next;
    if (setup_next < to_setup.size()) return setup_next_stream();
    return request("PLAY", play_url, {{"Range", "npt=0.000-"}});
  }
  if (method == "PLAY") {
    if (r.status != 200) return fail("PLAY answered " + std::to_string(r.status) + " " + r.reason);
    start_call();
  }
}

void rtsp_pull::impl::setup_next_stream() {
  const auto media = to_setup[setup_next];
  // A retried SETUP (461 over TCP) replaces the slot it made.
  if (!slots.empty() && slots.back()->media == media) {
    if (slots.back()->port) ctx->pool->release(slots.back()->port);
    slots.pop_back();
  }
  auto s = std::make_unique<slot>();
  s->media = media;
  if (!try_udp) {
    s->transport.tcp = true;
    s->transport.rtp_channel = static_cast<int>(2 * setup_next);
    s->transport.rtcp_channel = s->transport.rtp_channel + 1;
  } else {
    boost::system::error_code ec;
    const auto local = asio::ip::make_address(ctx->cfg.host, ec);
    for (std::size_t tries = 0; !ec && tries < ctx->pool->capacity() && !s->socket; ++tries) {
      auto p = ctx->pool->acquire();
      if (!p) break;
      auto sock = std::make_unique<udp::socket>(strand);
      boost::system::error_code bec;
      sock->open(local.is_v6() ? udp::v6() : udp::v4(), bec);
      if (!bec) sock->bind(udp::endpoint(local, *p), bec);
      if (bec) {
        ctx->pool->release(*p);
        continue;
      }
      s->socket = std::move(sock);
      s->port = *p;
    }
    if (!s->socket) return fail("no free RTP port (rtsp.rtp_port_min..rtp_port_max)");
    s->transport.client_rtp_port = s->port;
    s->transport.client_rtcp_port = static_cast<uint16_t>(s->port + 1);
    s->buf.resize(max_datagram);
    do_udp_receive(*s, gen);
    if (ctx->cfg.rtcp_interval_ms > 0) {
      std::string why;
      boost::system::error_code rec;
      const auto server = socket.remote_endpoint(rec).address();
      s->rtcp = udp_rtcp::open(strand, local, static_cast<uint16_t>(s->port + 1), server, why);
      if (!s->rtcp) {
        spdlog::warn("rtsp pull {}: no RTCP for a stream: {}", url, why);
      } else {
        slot* sp = s.get();
        const auto g = gen;
        s->rtcp->receive([this, sp, g, self = owner.lock()](std::span<const uint8_t> bytes) {
          if (g == gen && !stopped && state == phase::playing && sp->audio) sp->audio->on_rtcp(bytes, steady_us());
        });
      }
    }
  }
  const auto control = desc.media[media].control;
  const auto t = render_transport(s->transport);
  slots.push_back(std::move(s));
  request("SETUP", control, {{"Transport", t}});
}

void rtsp_pull::impl::do_udp_receive(slot& s, uint64_t g) {
  s.socket->async_receive_from(asio::buffer(s.buf), s.from, [this, g, &s, self = owner.lock()](boost::system::error_code ec, std::size_t n) {
    if (g != gen || stopped || ec) return;
    if (state == phase::playing && s.audio) {
      const auto now = steady_us();
      last_heard_ms = now / 1000;
      s.audio->on_packet(std::span<const uint8_t>(s.buf.data(), n), now);
    }
    do_udp_receive(s, g);
  });
}

void rtsp_pull::impl::start_call() {
  calls::call_start start;
  start.source = "rtsp";
  start.tenant = ctx->cfg.tenant;
  start.external_id = path;
  std::vector<rtsp_media> media;
  nlohmann::json streams = nlohmann::json::array();
  for (auto& s : slots) {
    const auto& m = desc.media[s->media];
    s->channel = static_cast<int>(media.size());
    media.push_back(m);
    streams.push_back({{"codec", codec_name(m.codec)}, {"payload_type", m.payload_type}, {"sample_rate", m.sample_rate},
                       {"channels", m.channels}, {"transport", s->transport.tcp ? "tcp" : "udp"}});
    const int ch = s->channel;
    s->audio = std::make_unique<rtp_audio_stream>(m, ctx->jitter(), [this, ch](std::vector<uint8_t> pcm) {
      if (call) call->audio(static_cast<std::size_t>(ch), std::move(pcm));
    }, ctx->cfg.max_stream_kbps);
  }
  for (std::size_t i = 0; i < media.size(); ++i)
    start.channel_labels.push_back(media.size() == 1 ? "mono" : "stream" + std::to_string(i + 1));
  start.metadata = {{"url", url}, {"pull", true}, {"streams", streams}};
  call = std::make_unique<rtsp_call>(*ctx->engine, ctx->registry, start, media, [url = url](bool ok, const std::string& why) {
    if (!ok) spdlog::warn("rtsp pull {}: the engine refused the channels: {}", url, why);
  });
  state = phase::playing;
  backoff_ms = ctx->cfg.pull_retry_min_ms;
  last_keepalive_ms = last_heard_ms = steady_ms();
  if (ctx->cfg.rtcp_interval_ms > 0) next_report_ms = last_heard_ms + report_delay_ms(ctx->cfg.rtcp_interval_ms);
  spdlog::info("rtsp pull {}: playing as call {}", url, call->id());
}

void rtsp_pull::impl::on_tick(uint64_t g) {
  if (g != gen || stopped) return;
  const auto now = steady_ms();
  if (state == phase::playing)
    for (auto& s : slots)
      if (s->audio) s->audio->tick(now);
  if (now - last_heard_ms > int64_t{ctx->cfg.session_timeout_s} * 1000)
    return fail(state == phase::playing ? "server gone: no RTP" : "server gone: no answer");
  if (state == phase::playing && ctx->cfg.rtcp_interval_ms > 0 && now >= next_report_ms) {
    send_reports(false);
    next_report_ms = now + report_delay_ms(ctx->cfg.rtcp_interval_ms);
  }
  // Keep the server's session alive: GET_PARAMETER at half its timeout (over UDP the RTSP
  // connection is otherwise silent).
  if (state == phase::playing && pending_cseq < 0 && now - last_keepalive_ms > int64_t{server_timeout_s} * 500) {
    last_keepalive_ms = now;
    request("GET_PARAMETER", play_url, {});
  }
  ticker.expires_after(tick_period);
  ticker.async_wait([this, g, self = owner.lock()](boost::system::error_code ec) {
    if (!ec) on_tick(g);
  });
}

void rtsp_pull::impl::send_reports(bool bye, std::string* direct) {
  // A server that stops reading its connection must not make our queue grow: a report is
  // skipped while earlier writes are still queued.
  if (!direct && out.size() > max_queued_writes) return;
  const auto now = steady_us();
  for (auto& s : slots)
    if (s->audio)
      send_report(*s->audio, s->transport, s->rtcp.get(), now, cname(), bye, [this, direct](std::string frame) {
        if (direct) *direct += frame;
        else send(std::move(frame));
      });
}

void rtsp_pull::impl::disconnect(const std::string& reason) {
  ++gen;
  if (call) {
    nlohmann::json stats = nlohmann::json::array();
    for (auto& s : slots)
      if (s->audio) {
        s->audio->flush();
        stats.push_back(s->audio->stats());
      }
    spdlog::info("rtsp pull {}: call {} over ({})", url, call->id(), reason);
    call->end(reason, stats);
    call.reset();
  }
  for (auto& s : slots) {
    if (s->socket) {
      boost::system::error_code ignored;
      s->socket->close(ignored);
    }
    if (s->rtcp) s->rtcp->close();
    if (s->port) ctx->pool->release(s->port);
  }
  slots.clear();
  boost::system::error_code ignored;
  resolver.cancel();
  ticker.cancel();
  socket.close(ignored);
  in.clear();
  out.clear();
  writing = false;
  pending_cseq = -1;
  session_id.clear();
  state = phase::idle;
}

void rtsp_pull::impl::fail(const std::string& reason) {
  const bool was_playing = state == phase::playing;
  disconnect(was_playing ? "server gone" : reason);
  if (stopped) return;
  spdlog::info("rtsp pull {}: {}; reconnecting in {} ms", url, reason, backoff_ms);
  if (auto o = owner.lock()) {
    std::lock_guard lock(o->failure_mu_);
    o->failure_ = reason;
  }
  retry.expires_after(std::chrono::milliseconds(backoff_ms));
  backoff_ms = std::min<int64_t>(backoff_ms * 2, ctx->cfg.pull_retry_max_ms);
  retry.async_wait([this, self = owner.lock()](boost::system::error_code ec) {
    if (!ec && !stopped) connect();
  });
}

rtsp_pull::rtsp_pull(std::shared_ptr<rtsp_context> ctx, std::string url)
    : impl_(std::make_unique<impl>(std::move(ctx), std::move(url))) {}

rtsp_pull::~rtsp_pull() = default;

std::string rtsp_pull::last_failure() const {
  std::lock_guard lock(failure_mu_);
  return failure_;
}

void rtsp_pull::start() {
  asio::post(impl_->strand, [self = shared_from_this()] {
    self->impl_->owner = self;
    self->impl_->connect();
  });
}

void rtsp_pull::stop() {
  asio::post(impl_->strand, [self = shared_from_this()] {
    auto& m = *self->impl_;
    if (m.stopped) return;
    m.stopped = true;
    // A blocking write now would interleave with an async write under way: then the TEARDOWN
    // is not sent (the connection closes below anyway, which ends the server's session too).
    if (m.state == impl::phase::playing && !m.writing) {
      // A last report with BYE on each stream (RFC 3550 6.6), then TEARDOWN. Best effort and
      // small: one blocking write on a connected socket (over UDP the reports go by datagram).
      std::string bytes;
      if (m.ctx->cfg.rtcp_interval_ms > 0) m.send_reports(true, &bytes);
      header_list h{{"Session", m.session_id}};
      if (m.challenge.scheme != auth_scheme::none)
        h.emplace_back("Authorization", authorization(m.challenge, m.creds.user, m.creds.password, "TEARDOWN",
                                                      m.play_url, ++m.nonce_count, m.cnonce));
      bytes += render_request("TEARDOWN", m.play_url, ++m.cseq, h);
      boost::system::error_code ignored;
      asio::write(m.socket, asio::buffer(bytes), ignored);
    }
    m.disconnect("stopped");
    m.retry.cancel();
    m.owner.reset();
  });
}

}  // namespace sluice::net::rtsp
