#include "net/sip/rtp_receiver.hpp"

#include <chrono>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace sluice::net::sip {

namespace asio = boost::asio;
using udp = asio::ip::udp;

namespace {
// The largest datagram read; RTP of 20-60 ms of any codec we take is far smaller, and a larger
// one is truncated by the kernel and then fails to parse.
constexpr std::size_t max_datagram = 2048;
constexpr int ms_per_s = 1000;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
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
      buf_(max_datagram) {}

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
  last_packet_ms_ = now_ms();
  asio::post(strand_, [self = shared_from_this()] {
    if (!self->stopped_ && !self->stopping_) self->do_receive();
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
  boost::system::error_code ignored;
  socket_.close(ignored);
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
  auto p = parse_rtp(std::span<const uint8_t>(buf_.data(), n));
  if (!p) {
    ++counters_.not_rtp;
    return;
  }
  if (!latched_) {
    latched_ = true;
    peer_ = from_;
  }
  const int64_t now = now_ms();
  last_packet_ms_ = now;
  // Only the codec's packets carry audio time; events and comfort noise keep their place in
  // the sequence but add none (the gap they leave is filled as silence).
  const bool audio = p->payload_type == decoder_.codec().payload_type;
  const auto duration = audio ? static_cast<uint32_t>(decoder_.codec().codec == audio_codec::g722
                                                          ? p->payload.size()  // 2 samples per byte, clock 8000
                                                          : p->payload.size())
                              : 0u;
  jitter_.push(*p, duration, now);
  deliver(jitter_.pop(now));
  arm_gap_timer();
}

void rtp_receiver::arm_gap_timer() {
  if (jitter_.held() == 0 || timer_armed_ || stopped_) return;
  timer_armed_ = true;
  // Exactly until the oldest held packet has waited its bound: a timer armed for an earlier
  // gap fires early and is armed again for the rest.
  gap_timer_.expires_after(std::chrono::milliseconds(std::max<int64_t>(1, jitter_.give_up_at_ms() - now_ms())));
  gap_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    self->timer_armed_ = false;
    if (ec || self->stopped_) return;
    self->deliver(self->jitter_.pop(now_ms()));
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
}

}  // namespace sluice::net::sip
