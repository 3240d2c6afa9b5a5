#pragma once
/// The sluice streaming protocol on /v1/stream (a ws_protocol, net/ws_protocol.hpp):
///   client -> {"type":"start","sample_rate":8000,"encoding":"pcm_s16le"|"mulaw"|"alaw"|"opus",
///              "channels":1,"hotwords":[{"phrase":"acme","weight":4}] or ["acme 4"],
///              "partials":true}
///   client -> binary audio (PCM bytes in any split; one Opus packet per message)
///   client -> {"type":"end"}
///   server -> {"type":"ready","channel":N}
///             {"type":"partial"|"final","utterance":N,"text":...,"start_ms":..,"end_ms":..,
///              "words":[{"word":..,"start_ms":..,"end_ms":..,"confidence":..}]}
///             {"type":"error","code":...,"reason":...}  (then a close unless code is "audio"
///             or "utterance_lost")
///             {"type":"end"} once every utterance has its final, then close 1000.
/// One stream is one call (source "stream", one channel labelled "mono").

#include <memory>

#include "net/ws_protocol.hpp"

namespace sluice::net {

std::unique_ptr<ws_protocol> make_sluice_protocol();

}  // namespace sluice::net
