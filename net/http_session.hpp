#pragma once
/// One HTTP connection (keep-alive, one request at a time): routes the requests of
/// server.hpp, hands WebSocket upgrades to ws_session.

#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include "net/server.hpp"

namespace sluice::net {

void run_http_session(boost::asio::ip::tcp::socket socket, std::shared_ptr<server_state> st);

/// The dashboard page (net/assets/dashboard.html, compiled in).
const char* dashboard_html();

}  // namespace sluice::net
