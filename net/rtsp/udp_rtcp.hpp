#pragma once
/// The UDP side of one RTSP stream's RTCP (RFC 3550 6, RFC 2326 12.39): a socket on the odd port
/// above the stream's RTP port, the peer's reports read from it, and ours sent back to where the
/// peer's come from (symmetric RTCP, as through NAT) or, before any has come, to the RTCP port
/// its Transport header named. Shared by pushes (rtsp_session) and pulls (rtsp_pull); over TCP
/// the reports go interleaved on the RTSP connection instead and this is not used.
///
/// Lives on its owner's strand; held by shared_ptr so that a receive cancelled by close() can
/// still finish after the owner dropped it.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/strand.hpp>

#include "net/rtsp/rtp_audio_stream.hpp"
#include "net/rtsp/rtsp_transport.hpp"
#include "net/sip/rtcp_stats.hpp"

namespace sluice::net::rtsp {

using sip::report_delay_ms;

class udp_rtcp : public std::enable_shared_from_this<udp_rtcp> {
 public:
  using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;
  using endpoint = boost::asio::ip::udp::endpoint;

  /// A socket bound to `address`:`port` that takes RTCP from `peer_address` only (the RTSP
  /// peer's: anyone else could time our reports or redirect them), or nullptr with `error`
  /// saying why.
  static std::shared_ptr<udp_rtcp> open(strand_type& strand, const boost::asio::ip::address& address, uint16_t port,
                                        const boost::asio::ip::address& peer_address, std::string& error);

  /// Reads datagrams until close(). Each from the peer's address goes to `on` (on the strand)
  /// and, once one has, replies go to its source. close() drops `on`, so it may hold its owner
  /// alive until then.
  void receive(std::function<void(std::span<const uint8_t>)> on);
  /// Where reports go until the peer's own RTCP has been heard (port 0: nowhere yet).
  void set_peer(endpoint to) { peer_ = std::move(to); }
  /// Sends one compound packet; false when there is no peer to send to or the send failed.
  bool send(std::span<const uint8_t> bytes);
  void close();

  explicit udp_rtcp(strand_type& strand) : socket_(strand) {}

 private:
  void next();

  boost::asio::ip::udp::socket socket_;
  std::vector<uint8_t> buf_ = std::vector<uint8_t>(2048);
  endpoint from_, peer_, heard_;
  boost::asio::ip::address peer_address_;
  bool have_heard_ = false, closed_ = false;
  std::function<void(std::span<const uint8_t>)> on_;
};

/// One stream's receiver report (rtp_audio_stream::receiver_report), sent the way its transport
/// says: over TCP as an interleaved frame on its RTCP channel, handed to `write` (the RTSP
/// connection's writer); over UDP as a datagram through `rtcp` (none: not sent). Nothing is sent
/// while the stream has heard no RTP.
void send_report(rtp_audio_stream& audio, const transport_spec& transport, udp_rtcp* rtcp, int64_t now_us,
                 std::string_view cname, bool bye, const std::function<void(std::string)>& write);

}  // namespace sluice::net::rtsp
