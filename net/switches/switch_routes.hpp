#pragma once
/// Which switch protocol a WebSocket path of the main port serves:
///   /audio_fork    FreeSWITCH mod_audio_fork (fork_protocol.hpp); the URL's query may name
///                  what FreeSWITCH was told: ?mixType=mono|mixed|stereo&sampleRate=8000|16000
///   /jambonz       jambonz `listen` (fork_protocol.hpp; the metadata frame names rate and mix)
///   /jambonz/stt   jambonz custom speech-to-text vendor API (jambonz_stt_protocol.hpp)
///   /twilio        Twilio Media Streams (twilio_protocol.hpp)
///   /audiohook     Genesys AudioHook (audiohook_protocol.hpp)
/// Every path is behind the server's gate like any WebSocket (scope "stream"): jambonz's
/// Bearer token and AudioHook's X-API-KEY are API keys of [auth].

#include <memory>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

#include "net/switches/switch_protocol.hpp"

namespace sluice::net::switches {

/// Whether `path` (without the query) is a switch protocol's.
bool is_switch_path(std::string_view path);

/// A new state machine for `target` (path and query); an error message (for a 400) when its
/// query is malformed. `session_header`: the request's Audiohook-Session-Id.
tl::expected<std::unique_ptr<switch_protocol>, std::string> make_switch_protocol(std::string_view target,
                                                                                 std::string session_header);

}  // namespace sluice::net::switches
