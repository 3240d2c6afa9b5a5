#include "net/rtsp/udp_rtcp.hpp"

#include "net/rtsp/rtsp_message.hpp"

namespace sluice::net::rtsp {

namespace asio = boost::asio;
using asio::ip::udp;

std::shared_ptr<udp_rtcp> udp_rtcp::open(strand_type& strand, const asio::ip::address& address, uint16_t port,
                                         const asio::ip::address& peer_address, std::string& error) {
  auto r = std::make_shared<udp_rtcp>(strand);
  r->peer_address_ = peer_address;
  boost::system::error_code ec;
  r->socket_.open(address.is_v6() ? udp::v6() : udp::v4(), ec);
  if (!ec) r->socket_.bind(endpoint(address, port), ec);
  if (ec) {
    error = "cannot bind RTCP port " + std::to_string(port) + ": " + ec.message();
    return nullptr;
  }
  return r;
}

void udp_rtcp::receive(std::function<void(std::span<const uint8_t>)> on) {
  on_ = std::move(on);
  next();
}

void udp_rtcp::next() {
  socket_.async_receive_from(asio::buffer(buf_), from_, [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
    if (ec || self->closed_) return;
    if (self->from_.address() == self->peer_address_) {
      self->heard_ = self->from_;
      self->have_heard_ = true;
      if (self->on_) self->on_(std::span<const uint8_t>(self->buf_.data(), n));
    }
    if (!self->closed_) self->next();
  });
}

bool udp_rtcp::send(std::span<const uint8_t> bytes) {
  const auto& to = have_heard_ ? heard_ : peer_;
  if (closed_ || bytes.empty() || to.port() == 0) return false;
  boost::system::error_code ec;
  socket_.send_to(asio::buffer(bytes.data(), bytes.size()), to, 0, ec);
  return !ec;
}

void udp_rtcp::close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
  // The callback holds its owner (a session or pull that holds this): let go of it, or
  // neither would ever be freed.
  on_ = nullptr;
}

void send_report(rtp_audio_stream& audio, const transport_spec& transport, udp_rtcp* rtcp, int64_t now_us,
                 std::string_view cname, bool bye, const std::function<void(std::string)>& write) {
  if (!transport.tcp && !rtcp) return;
  const auto rr = audio.receiver_report(now_us, cname, bye);
  if (rr.empty()) return;
  if (!transport.tcp) {
    if (rtcp->send(rr)) audio.report_sent();
    return;
  }
  const auto frame = render_interleaved(static_cast<uint8_t>(transport.rtcp_channel), rr);
  write(std::string(frame.begin(), frame.end()));
  audio.report_sent();
}

}  // namespace sluice::net::rtsp
