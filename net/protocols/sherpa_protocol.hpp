#pragma once
/// The sherpa-onnx streaming WebSocket protocol (a ws_protocol, net/ws_protocol.hpp), as
/// sherpa-onnx's online-websocket-server speaks it (PROTOCOLS.md): served on its own port
/// (listeners.sherpa_port, any path) and on /sherpa of the main port.
///   client -> binary float32 LE samples in [-1, 1] at listeners.sherpa_sample_rate (no start
///             message; the channel opens with the first samples)
///   client -> the text frame "Done": no more audio
///   server -> {"text","tokens","timestamps","segment","start_time","is_final","is_eof","words"}
///             whenever the hypothesis changes: "text" is the whole hypothesis of the current
///             segment (one segment per utterance), "tokens" its words, "timestamps" their
///             starts in s from start_time, "start_time" the segment's start in s from the
///             stream's start, "words" [{"word","start","end","conf"}] in s; at an endpoint
///             "is_final" true and the next segment number follows.
///   server -> after "Done" and every final: one last result with "is_eof" true (the last
///             segment's final again, or an empty one when there was none), then the text
///             frame "Done!", then close 1000.
/// Errors (sherpa-onnx's server has no error message; its clients print every text frame):
/// {"error": code, "reason": ...} then a close. One stream is one call (source "sherpa").

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "net/ws_protocol.hpp"

namespace sluice::net {

std::unique_ptr<ws_protocol> make_sherpa_protocol();

/// float32 LE samples as the engine takes them: errc::invalid_argument when the byte count is
/// not a multiple of 4 or a sample is not finite; finite samples are clamped to [-1, 1].
result<std::vector<float>> sherpa_samples(const std::vector<uint8_t>& bytes);

}  // namespace sluice::net
