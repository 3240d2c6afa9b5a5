#pragma once
/// The Asterisk AudioSocket TCP listener ([audiosocket], default port 9092): Asterisk connects
/// and streams one call per connection (framing: audiosocket_frame.hpp).
///
/// A connection must begin with the UUID message; the call is registered (source
/// "audiosocket", external id the UUID, one channel labelled "caller": the audio of the
/// Asterisk channel that runs AudioSocket()) when its first audio message names the rate
/// (8 kHz, or 12-192 kHz with the newer kinds; the rate may not change during the call). DTMF
/// digits become call events ("dtmf", data {"digit"}). A hangup message, or the socket's
/// closure, ends the call: its finals are still computed (the call registry receives them),
/// then the connection closes. An error message from Asterisk ends the call the same way,
/// with its code in the end reason.
///
/// Nothing is sent back except, before closing a bad connection, one error message (kind 0xff)
/// whose payload is a readable reason: audio or DTMF before the UUID, a second UUID, a UUID or
/// DTMF of the wrong length, an unknown kind, a rate change, a refused channel (engine full),
/// past [audiosocket] max_connections, idle for idle_timeout_s. A truncated message (the socket
/// closes inside it) ends the call like a closure. No exception leaves a handler: it fails that
/// connection only.
///
/// Threading: the listener and its connections run on the server's io_context, each
/// connection on its own strand.

#include <cstddef>
#include <cstdint>
#include <memory>

#include <boost/asio/io_context.hpp>

#include "config/audiosocket_config.hpp"
#include "config/error.hpp"
#include "net/server.hpp"

namespace sluice::net::switches {

/// DTMF messages held for a call that has sent no audio yet (its channel opens with the first
/// audio message, which gives the rate); one more is answered with an error and the close.
inline constexpr std::size_t max_dtmf_before_audio = 256;

class audiosocket_listener {
 public:
  /// Binds cfg.host:cfg.port (0: any free port). errc::io when it cannot listen;
  /// errc::invalid_config for a non-loopback host without allow_public.
  static result<std::shared_ptr<audiosocket_listener>> start(boost::asio::io_context& ioc,
                                                             std::shared_ptr<server_state> st,
                                                             const config::audiosocket_config& cfg);
  virtual ~audiosocket_listener() = default;
  virtual uint16_t port() const = 0;
  /// Connections open now.
  virtual int connections() const = 0;
  /// Stops accepting; open calls go on until they end (the engine's drain ends them).
  virtual void stop() = 0;
};

}  // namespace sluice::net::switches
