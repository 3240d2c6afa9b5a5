#pragma once
/// What every RTSP session and pull of one service shares: the configuration, the engine, the
/// call registry, the RTP port pool, the io_context they run on, and the live counts.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include <boost/asio/io_context.hpp>

#include "actors/engine.hpp"
#include "config/rtsp_config.hpp"
#include "net/auth/failure_limiter.hpp"
#include "net/auth/key_streams.hpp"
#include "net/auth/principal.hpp"
#include "net/calls/call_registry.hpp"
#include "net/rtsp/rtsp_message.hpp"
#include "net/sip/jitter_buffer.hpp"
#include "net/sip/port_pool.hpp"

namespace sluice::net::rtsp {

struct rtsp_context {
  config::rtsp_config cfg;
  actors::engine* engine = nullptr;
  std::shared_ptr<calls::call_registry> registry;
  std::shared_ptr<sip::port_pool> pool;
  boost::asio::io_context* ioc = nullptr;
  /// The API key check of pushes (rtsp_service.hpp): the key's principal, or nullopt for a key
  /// that is not valid. Empty: pushes need no key.
  std::function<std::optional<auth::principal>(std::string_view key)> authenticate;
  /// The server's per-address back-off after invalid keys (auth.max_failures), shared with its
  /// HTTP routes; null: invalid keys are only answered 401.
  std::shared_ptr<auth::failure_limiter> auth_failures;
  /// The server's registry of connections per API key: a push enrols once its key is taken,
  /// and a reload that revokes the key closes it (call ended "error: key_revoked"). Null: not.
  std::shared_ptr<auth::key_streams> key_streams;
  /// Closed by rtsp_service::stop() before its io_context goes: a revocation posts only while open.
  struct post_gate {
    std::mutex mu;
    bool open = true;
  };
  std::shared_ptr<post_gate> gate = std::make_shared<post_gate>();
  /// ANNOUNCEd push sessions now (bounded by cfg.max_sessions) and open connections.
  std::atomic<int> sessions{0}, connections{0};

  message_limits limits() const {
    message_limits l;
    l.max_header_bytes = static_cast<std::size_t>(cfg.max_header_bytes);
    l.max_body_bytes = static_cast<std::size_t>(cfg.max_body_bytes);
    return l;
  }
  sip::jitter_buffer_config jitter() const {
    sip::jitter_buffer_config j;
    j.max_delay_ms = cfg.jitter_max_delay_ms;
    j.max_fill_ms = cfg.max_fill_ms;
    return j;
  }
};

}  // namespace sluice::net::rtsp
