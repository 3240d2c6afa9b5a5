#include "net/sip/rtp_receiver.hpp"

#include <chrono>
#include <random>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "net/steady_time.hpp"

namespace sluice::net::sip {

namespace asio = boost::asio;
using udp = asio::ip::udp;

namespace {
// The largest datagram read; RTP of 20-60 ms of any codec we take is far smaller, and a larger
// one is truncated by the kernel and then fails to parse.
constexpr std::size_t max_datagram = 2048;
constexpr int ms_per_s = 1000;

}  // namespace

rtp_receiver::rtp_receiver(asio::io_context& ioc, std::shared_ptr<port_pool> pool, jitter_buffer_config jitter,
                           codec_choice codec, int telephone_event_pt, rtp_sinks sinks)
    : strand_(asio::make_strand(ioc)),
      socket_(strand_),
      gap_timer_(strand_),
      pool_(std::move(pool)),
      jitter_(jitter),
      decoder_(codec),
      te_pt_(telephone_event_pt),
      sinks_(std::move(sinks)),
      buf_(max_datagram),
      rtcp_socket_(strand_),
      rtcp_timer_(strand_),
      rtcp_stats_(codec.clock_rate) {}

rtp_receiver::~rtp_receiver() {
  if (port_) pool_->release(port_);
}

result<std::shared_ptr<rtp_receiver>> rtp_receiver::open(asio::io_context& ioc, const std::string& host,
                                                         std::shared_ptr<port_pool> pool, jitter_buffer_config jitter,
                                                         codec_choice codec, int telephone_event_pt, rtp_sinks sinks) {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return fail(errc::invalid_config, "rtp: \"" + host + "\" is not an IP address");
  std::shared_ptr<rtp_receiver> r(new rtp_receiver(ioc, pool, jitter, codec, telephone_event_pt, std::move(sinks)));
  // A port another program holds fails to bind: give it back and try the next, at most once
  // around the pool.
  for (std::size_t tries = 0; tries < pool->capacity(); ++tries) {
    auto port = pool->acquire();
    if (!port) break;
    const udp::endpoint ep(address, *port);
    r->socket_.open(ep.protocol(), ec);
    if (!ec) r->socket_.bind(ep, ec);
    if (!ec) {
      r->port_ = *port;
      return r;
    }
    boost::system::error_code ignored;
    r->socket_.close(ignored);
    pool->release(*port);
  }
  return fail(errc::limit_exceeded, "rtp: no free port in the pool");
}

void rtp_receiver::start() {
  last_packet_ms_ = steady_ms();
  asio::post(strand_, [self = shared_from_this()] {
    if (self->stopped_ || self->stopping_) return;
    self->do_receive();
    if (self->rtcp_) {
      if (!self->rtcp_mux_) self->do_receive_rtcp();
      self->arm_rtcp_timer();
    }
  });
}

void rtp_receiver::stop(std::function<void()> done) {
  asio::post(strand_, [self = shared_from_this(), done = std::move(done)]() mutable {
    if (self->stopped_ || self->stopping_) {
      if (done) done();
      return;
    }
    self->stopping_ = true;
    self->stop_done_ = std::move(done);
    // A receive in flight may already hold a datagram whose handler is queued behind this one:
    // cancel it and finish in its handler, after that datagram is counted, so nothing read from
    // the socket is lost and the handler and the drain never share the buffer.
    if (self->receiving_) {
      boost::system::error_code ignored;
      self->socket_.cancel(ignored);
    } else {
      self->finish_stop();
    }
  });
}

void rtp_receiver::finish_stop() {
  // What arrived before the hang-up is part of the call: read what the socket still queues.
  boost::system::error_code ec;
  socket_.non_blocking(true, ec);
  while (!ec) {
    const auto n = socket_.receive_from(asio::buffer(buf_), from_, 0, ec);
    if (!ec) on_datagram(n);
  }
  stopped_ = true;
  // The last report covers every packet read, and says we leave (RFC 3550 6.6).
  send_report(true);
  boost::system::error_code ignored;
  socket_.close(ignored);
  rtcp_socket_.close(ignored);
  rtcp_timer_.cancel();
  gap_timer_.cancel();
  deliver(jitter_.flush());
  publish_stats();
  if (auto done = std::move(stop_done_)) done();
}

void rtp_receiver::do_receive() {
  receiving_ = true;
  socket_.async_receive_from(asio::buffer(buf_), from_,
                             [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                               self->receiving_ = false;
                               if (self->stopped_) return;
                               if (!ec) {
                                 try {
                                   self->on_datagram(n);
                                 } catch (const std::exception& e) {
                                   spdlog::error("rtp {}: a datagram's handler threw: {}", self->port_, e.what());
                                 }
                               }
                               if (self->stopping_) {
                                 self->finish_stop();
                               } else if (!ec) {
                                 self->do_receive();
                               }
                             });
}

void rtp_receiver::on_datagram(std::size_t n) {
  ++counters_.datagrams;
  if (latched_ && from_ != peer_) {
    ++counters_.foreign_source;
    return;
  }
  if (!rate_.admit(n, steady_us())) {
    ++counters_.over_rate;
    return;
  }
  std::size_t size = n;
  if (srtp_in_) {
    // RFC 5761 4: with rtcp-mux, RTCP is told from RTP by its second byte (packet types 200-204
    // read as payload types 72-76 with the marker bit); SRTCP and SRTP differ in their trailers.
    const unsigned pt = n >= 2 ? buf_[1] & 0x7fu : 0u;
    const bool rtcp = rtcp_mux_ && pt >= 64 && pt <= 95;
    if (!srtp_checked(buf_.data(), size, rtcp, counters_.not_rtp)) return;
    if (rtcp) return take_rtcp({buf_.data(), size}, from_);
  }
  const std::span<const uint8_t> datagram(buf_.data(), size);
  auto p = parse_rtp(datagram);
  if (!p) {
    // RFC 5761: with rtcp-mux the peer's RTCP arrives here too.
    if (rtcp_mux_ && parse_rtcp(datagram)) return on_rtcp(datagram, from_);
    ++counters_.not_rtp;
    return;
  }
  if (!latched_) {
    latched_ = true;
    peer_ = from_;
  }
  const int64_t now = steady_ms();
  last_packet_ms_ = now;
  // Only the codec's packets carry audio time; events and comfort noise keep their place in
  // the sequence but add none (the gap they leave is filled as silence).
  const bool audio = p->payload_type == decoder_.codec().payload_type;
  if (decoder_.codec().comfort_noise_pt >= 0 && p->payload_type == decoder_.codec().comfort_noise_pt)
    ++counters_.comfort_noise_packets;
  const auto duration = audio ? rtp_packet_duration(decoder_.codec(), p->payload) : 0u;
  rtcp_stats_.on_rtp(p->ssrc, p->seq, p->timestamp, audio, steady_us());
  jitter_.push(*p, duration, now);
  deliver(jitter_.pop(now));
  arm_gap_timer();
}

bool rtp_receiver::srtp_checked(uint8_t* data, std::size_t& size, bool rtcp, std::atomic<uint64_t>& malformed) {
  const auto r = rtcp ? srtp_in_->unprotect_rtcp(data, size) : srtp_in_->unprotect_rtp(data, size);
  switch (r) {
    case srtp_check::ok: return true;
    case srtp_check::replayed: ++counters_.srtp_replayed; return false;
    case srtp_check::auth_failed: ++counters_.srtp_auth_failed; return false;
    case srtp_check::malformed: ++malformed; return false;
  }
  return false;
}

void rtp_receiver::rekey(std::unique_ptr<srtp_session> inbound) {
  if (!inbound) return;
  // Asio handlers need only be movable: the session moves onto the strand with it.
  asio::post(strand_, [self = shared_from_this(), next = std::move(inbound)]() mutable {
    if (self->srtp_in_) self->srtp_in_ = std::move(next);
  });
}

void rtp_receiver::arm_gap_timer() {
  if (jitter_.held() == 0 || timer_armed_ || stopped_) return;
  timer_armed_ = true;
  // Exactly until the oldest held packet has waited its bound: a timer armed for an earlier
  // gap fires early and is armed again for the rest.
  gap_timer_.expires_after(std::chrono::milliseconds(std::max<int64_t>(1, jitter_.give_up_at_ms() - steady_ms())));
  gap_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    self->timer_armed_ = false;
    if (ec || self->stopped_) return;
    self->deliver(self->jitter_.pop(steady_ms()));
    self->arm_gap_timer();
  });
}

void rtp_receiver::deliver(std::vector<playout_item> items) {
  if (items.empty()) return;
  std::vector<int16_t> pcm;
  for (const auto& it : items) {
    if (it.what == playout_item::kind::packet && te_pt_ >= 0 && it.payload_type == te_pt_) on_event(it);
    else decoder_.decode(it, pcm);
  }
  publish_stats();
  if (pcm.empty() || !sinks_.audio) return;
  std::vector<uint8_t> bytes(pcm.size() * 2);
  for (std::size_t i = 0; i < pcm.size(); ++i) {
    const auto v = static_cast<uint16_t>(pcm[i]);
    bytes[2 * i] = static_cast<uint8_t>(v & 0xff);
    bytes[2 * i + 1] = static_cast<uint8_t>(v >> 8);
  }
  sinks_.audio(std::move(bytes));
}

void rtp_receiver::on_event(const playout_item& item) {
  auto e = parse_telephone_event(item.payload);
  if (!e) return;
  // A new event (another timestamp) while the last one never showed its end: report that one.
  if (event_open_ && item.timestamp != event_ts_) {
    if (sinks_.dtmf && dtmf_char(event_code_))
      sinks_.dtmf(dtmf_char(event_code_), event_duration_ * ms_per_s / decoder_.codec().clock_rate);
    event_open_ = false;
  }
  if (!event_open_ && item.timestamp == event_ts_ && reported_ts_valid_) return;  // a repeated end packet
  event_open_ = true;
  event_ts_ = item.timestamp;
  event_code_ = e->event;
  event_duration_ = e->duration;
  if (e->end) {
    if (sinks_.dtmf && dtmf_char(e->event))
      sinks_.dtmf(dtmf_char(e->event), e->duration * ms_per_s / decoder_.codec().clock_rate);
    event_open_ = false;
    reported_ts_valid_ = true;
  }
}

void rtp_receiver::publish_stats() {
  const auto& s = jitter_.stats();
  counters_.packets_lost = s.lost;
  counters_.late = s.late;
  counters_.reordered = s.reordered;
  counters_.max_hold_ms = s.max_hold_ms;
  counters_.concealed_samples = decoder_.concealed_samples();
  counters_.comfort_noise_samples = decoder_.comfort_noise_samples();
}

result<void> rtp_receiver::enable_rtcp(const std::string& host, bool mux, udp::endpoint remote, int interval_ms,
                                       std::string cname) {
  rtcp_ = true;
  rtcp_mux_ = mux;
  rtcp_remote_ = remote;
  rtcp_interval_ms_ = interval_ms;
  rtcp_cname_ = std::move(cname);
  std::random_device rd;
  rtcp_ssrc_ = static_cast<uint32_t>(rd());
  rtcp_buf_.resize(max_datagram);
  if (mux) return {};
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return fail(errc::invalid_config, "rtcp: \"" + host + "\" is not an IP address");
  // port_pool hands out even ports and leaves the odd one above each for its RTCP.
  const udp::endpoint ep(address, static_cast<uint16_t>(port_ + 1));
  rtcp_socket_.open(ep.protocol(), ec);
  if (!ec) rtcp_socket_.bind(ep, ec);
  if (ec) {
    boost::system::error_code ignored;
    rtcp_socket_.close(ignored);
    rtcp_ = false;
    return fail(errc::io, "rtcp: cannot bind port " + std::to_string(port_ + 1) + ": " + ec.message());
  }
  return {};
}

void rtp_receiver::do_receive_rtcp() {
  rtcp_socket_.async_receive_from(asio::buffer(rtcp_buf_), rtcp_recv_from_,
                                  [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                                    if (ec == asio::error::operation_aborted || self->stopped_ || self->stopping_)
                                      return;
                                    if (!ec) self->on_rtcp_datagram(n);
                                    self->do_receive_rtcp();
                                  });
}

void rtp_receiver::on_rtcp_datagram(std::size_t n) {
  if (srtp_in_ && !srtp_checked(rtcp_buf_.data(), n, true, counters_.rtcp_invalid)) return;
  take_rtcp({rtcp_buf_.data(), n}, rtcp_recv_from_);
}

void rtp_receiver::take_rtcp(std::span<const uint8_t> datagram, const udp::endpoint& from) {
  if (parse_rtcp(datagram)) on_rtcp(datagram, from);
  else ++counters_.rtcp_invalid;
}

void rtp_receiver::on_rtcp(std::span<const uint8_t> datagram, const udp::endpoint& from) {
  auto c = parse_rtcp(datagram);
  if (!c) return;
  ++counters_.rtcp_received;
  // Symmetric RTCP: the peer's reports come from where it listens for ours (and through NAT,
  // from the only address that reaches it).
  rtcp_from_ = from;
  rtcp_peer_heard_ = true;
  if (c->sender) rtcp_stats_.on_sender_report(c->sender->ntp, steady_us());
  if (!c->bye.empty()) counters_.rtcp_bye = true;
}

void rtp_receiver::arm_rtcp_timer() {
  rtcp_timer_.expires_after(std::chrono::milliseconds(report_delay_ms(rtcp_interval_ms_)));
  rtcp_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->stopped_) return;
    self->send_report(false);
    self->arm_rtcp_timer();
  });
}

void rtp_receiver::send_report(bool bye) {
  // Nothing heard, nothing to report: no RR and no BYE (a call cancelled before any RTP).
  if (!rtcp_ || !rtcp_stats_.has_source()) return;
  const std::vector<rtcp_report_block> blocks{rtcp_stats_.report(steady_us())};
  auto bytes = render_receiver_report(rtcp_ssrc_, blocks, rtcp_cname_, bye);
  if (srtp_out_ && !srtp_out_->protect_rtcp(bytes)) return;
  udp::endpoint to = rtcp_peer_heard_ ? rtcp_from_ : rtcp_mux_ && latched_ ? peer_ : rtcp_remote_;
  if (to.port() == 0) return;
  boost::system::error_code ec;
  (rtcp_mux_ ? socket_ : rtcp_socket_).send_to(asio::buffer(bytes), to, 0, ec);
  if (!ec) ++counters_.rtcp_sent;
}

}  // namespace sluice::net::sip
