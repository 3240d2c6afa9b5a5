#pragma once
/// A new TCP connection, before HTTP: plain, or TLS when [server] names a certificate.
///
/// With TLS configured the port serves TLS only, on the same port (Beast's
/// advanced_server_flex way, beast::async_detect_ssl on the first bytes): one port to configure
/// and to open in a firewall, and a client that speaks plain HTTP by mistake gets a readable
/// answer (400, "use https:// or wss://") instead of a TLS alert it cannot show, while nothing
/// is ever served unencrypted. A TLS client is handshaken with the context current at that
/// moment (net/tls_context.hpp), then served by the same HTTP and WebSocket sessions as plain
/// TCP. The TLS detection and handshake run under server.idle_timeout_s; a failed handshake
/// closes that connection only (logged at debug: scanners cause them by the thousand).
/// Connections are counted against server.max_connections from accept (net/connection_slot.hpp),
/// so clients stalled in their TLS handshake or HTTP request hold slots (each for at most
/// server.idle_timeout_s); over the limit a TLS connection is closed before its handshake (there
/// is no TLS yet to answer in) and a plain one gets 503.

#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include "net/server.hpp"

namespace sluice::net {

/// `kind`: which port accepted it (its protocol and connection limit, net/ws_routes.hpp).
void run_connection(boost::asio::ip::tcp::socket socket, std::shared_ptr<server_state> st,
                    ws_listener kind = ws_listener::main);

}  // namespace sluice::net
