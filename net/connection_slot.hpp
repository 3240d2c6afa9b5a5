#pragma once
/// One open connection counted against its port's limit (server.max_connections, or the
/// protocol port's own), for as long as the slot lives: from accept, through the TLS detection
/// and handshake, HTTP and a WebSocket (net/connection.hpp hands it on to each stage).

#include <atomic>
#include <memory>

#include "net/server.hpp"

namespace sluice::net {

struct connection_slot {
  connection_slot(std::shared_ptr<server_state> s, ws_listener k) : st(std::move(s)), kind(k) {
    ++st->connections;
    ++own();
  }
  ~connection_slot() {
    --st->connections;
    --own();
  }
  connection_slot(const connection_slot&) = delete;
  connection_slot& operator=(const connection_slot&) = delete;

  std::atomic<int>& own() { return st->listener_connections[static_cast<std::size_t>(kind)]; }
  /// True when this connection is one more than its port allows.
  bool over_limit() { return own() > st->max_connections(kind); }

  std::shared_ptr<server_state> st;
  ws_listener kind;
};

}  // namespace sluice::net
