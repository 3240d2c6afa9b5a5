#pragma once
/// WS /v1/events: live updates of calls (net/calls/call_json.hpp lists the messages:
/// call_start, partial, final, event, call_end), one JSON text message each, in the order the
/// registry saw them. Filtered by ?call=ID and, for admin keys, ?tenant=T (net/calls/calls_api.hpp);
/// a tenant's key gets its own tenant's calls only. Messages from the client are read and ignored
/// (a close frame ends the session).
///
/// A client that reads too slowly is dropped, never waited for: the updates not yet written wait
/// in the subscription's queue ([calls] subscriber_queue); when it overflows the session sends
/// {"type":"error","code":"slow","reason":"fell behind: ..."} and closes with 1008, or, when its
/// socket is so full that a write is still pending, closes the connection at once.

#include <cstdint>
#include <memory>

#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "net/calls/call_subscription.hpp"
#include "net/server.hpp"

namespace sluice::net {

/// Takes over an upgraded connection (the filter already checked); `slot` keeps it counted.
/// `who` (the subscriber's key) is enrolled with the server's key_streams: a reload that
/// revokes the key (or its read scope) sends {"type":"error","code":"key_revoked"} and closes 1008.
void run_events_session(boost::beast::tcp_stream stream,
                        boost::beast::http::request<boost::beast::http::string_body> req,
                        std::shared_ptr<server_state> st, calls::subscription_filter filter,
                        std::shared_ptr<void> slot, uint64_t id, const auth::principal& who);
/// The same over TLS.
void run_events_session(boost::beast::ssl_stream<boost::beast::tcp_stream> stream,
                        boost::beast::http::request<boost::beast::http::string_body> req,
                        std::shared_ptr<server_state> st, calls::subscription_filter filter,
                        std::shared_ptr<void> slot, uint64_t id, const auth::principal& who);

}  // namespace sluice::net
