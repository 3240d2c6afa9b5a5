#pragma once
/// One HTTP connection (keep-alive, one request at a time): routes the requests of
/// server.hpp, hands WebSocket upgrades to ws_session. The same session serves plain TCP and
/// TLS (a Beast stream template, net/connection.hpp decides which).

#include <memory>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "net/connection_slot.hpp"
#include "net/server.hpp"

namespace sluice::net {

/// Serves HTTP on `stream`; `buffer` holds bytes already read from it (by the TLS detection).
/// `kind`: the port it came in on; on a protocol port (not main) every WebSocket upgrade speaks
/// that port's protocol whatever its path, and other requests get 400. `slot`: the connection's
/// count since it was accepted (net/connection.cpp); null: counted from now. Over the limit the
/// session answers 503 and closes.
void run_http_session(boost::beast::tcp_stream stream, boost::beast::flat_buffer buffer,
                      std::shared_ptr<server_state> st, ws_listener kind = ws_listener::main,
                      std::shared_ptr<connection_slot> slot = nullptr);
/// The same over TLS (the handshake done).
void run_http_session(boost::beast::ssl_stream<boost::beast::tcp_stream> stream, boost::beast::flat_buffer buffer,
                      std::shared_ptr<server_state> st, ws_listener kind = ws_listener::main,
                      std::shared_ptr<connection_slot> slot = nullptr);

/// The dashboard page (net/assets/dashboard.html, compiled in).
const char* dashboard_html();

}  // namespace sluice::net
