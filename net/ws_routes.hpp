#pragma once
/// Which WebSocket protocol a connection speaks: on the main port by its path, on a protocol's
/// own port (net/server.hpp, [listeners]) always that protocol, whatever the path.

#include <cstddef>
#include <memory>
#include <string_view>

#include "net/ws_protocol.hpp"

namespace sluice::net {

/// The protocols with a port of their own ([listeners]); `main` is the main port's routing.
enum class ws_listener { main, funasr, sherpa, vosk };
inline constexpr std::size_t ws_listener_count = 4;

/// The protocol of a WebSocket upgrade to `path` on the main port: /v1/stream (sluice),
/// /funasr and / (FunASR: its clients connect to the root path), /sherpa, /vosk. Null: no
/// WebSocket at that path.
std::unique_ptr<ws_protocol> protocol_for_path(std::string_view path);

/// The protocol of a listener's own port (null for main).
std::unique_ptr<ws_protocol> protocol_for_listener(ws_listener l);

/// The listener's name as in [listeners] and in `sluice serve`'s summary ("funasr", ...).
std::string_view listener_name(ws_listener l);

}  // namespace sluice::net
