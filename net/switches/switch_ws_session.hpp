#pragma once
/// One WebSocket connection of a switch (switch_routes.hpp): the transport that carries out a
/// switch_protocol's steps. The call's channels (call_channels.hpp) get the audio; results go
/// back as the protocol words them and into the call registry.
///
/// Unlike a /v1/stream client, a switch that closes its side (a close frame, a reset) does not
/// abandon the call: its audio so far is still transcribed and the call's finals are kept in
/// the registry (GET /v1/calls), ending with reason "switch closed". An error (the protocol's
/// own error message, then a close with the step's code) ends the call with "error: <reason>";
/// likewise idle for server.idle_timeout_s (close 1001) and a message over
/// server.max_message_bytes (close 1009). A call the engine refuses closes with 1013 (full) or
/// 1011. No exception leaves a handler: it fails that connection only.

#include <cstdint>
#include <memory>

#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "net/auth/principal.hpp"
#include "net/server.hpp"
#include "net/switches/switch_protocol.hpp"

namespace sluice::net::switches {

using upgrade_request = boost::beast::http::request<boost::beast::http::string_body>;

/// Takes over an upgraded connection; `slot` keeps it counted until it closes; `who` was
/// admitted by the gate (its tenant owns the call).
void run_switch_session(boost::beast::tcp_stream stream, upgrade_request req, std::shared_ptr<server_state> st,
                        std::unique_ptr<switch_protocol> protocol, std::shared_ptr<void> slot, uint64_t id,
                        auth::principal who);
void run_switch_session(boost::beast::ssl_stream<boost::beast::tcp_stream> stream, upgrade_request req,
                        std::shared_ptr<server_state> st, std::unique_ptr<switch_protocol> protocol,
                        std::shared_ptr<void> slot, uint64_t id, auth::principal who);

}  // namespace sluice::net::switches
