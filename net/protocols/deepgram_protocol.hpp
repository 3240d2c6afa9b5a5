#pragma once
/// Deepgram's live transcription WebSocket (a ws_protocol, net/ws_protocol.hpp), on
/// `/v1/listen` of the main port, as Deepgram's own SDKs speak it (the Node SDK's
/// ListenLiveClient, and voice-agent frameworks built on it): the options in the URL's query
/// (deepgram_query.hpp), the key in `Authorization: Token <key>` (or Bearer), or from a browser
/// as the subprotocol pair `token, <key>` ("token" is granted).
///   client -> binary raw audio in `encoding` at `sample_rate` (2 channels interleaved with
///             multichannel=true); {"type":"KeepAlive"} (nothing); {"type":"Finalize"} (every
///             utterance so far finished now: its finals come with "from_finalize": true, an
///             empty one per channel where there was nothing to finish, and the stream goes on;
///             a Finalize while 8 earlier ones are still finishing is a protocol error);
///             {"type":"CloseStream"} or an empty binary message (the same, then Metadata and
///             close 1000).
///   server -> {"type":"Results","channel_index":[c,n],"start","duration","is_final",
///             "speech_final","from_finalize","channel":{"alternatives":[{"transcript",
///             "confidence","words":[{"word","start","end","confidence","punctuated_word"}]}]},
///             "metadata":{"request_id","model_info":{"name","version","arch"},"model_uuid"}}
///             (times in s from the stream's start): partials with is_final false only with
///             interim_results=true; finals with is_final and speech_final true (sluice finals
///             come at its endpoints). With punctuate or smart_format the transcripts are the
///             display form (written numbers, punctuation, casing); `alternatives=N` gives up to
///             N readings per final. {"type":"SpeechStarted","channel":[c,n],"timestamp"} with
///             vad_events=true (at an utterance's first result, so later than Deepgram's);
///             {"type":"UtteranceEnd","channel":[c,n],"last_word_end"} after each final with
///             words when utterance_end_ms is set; last {"type":"Metadata","request_id","sha256"
///             (of the audio bytes received),"created","duration","channels", ...}.
/// Errors: {"type":"Error","description","message"} then a close (1008 protocol, 1003 audio).
/// One stream is one call (source "deepgram"); request_id is its call id (GET /v1/calls/{id}).

#include <memory>
#include <string_view>

#include "net/protocols/deepgram_query.hpp"
#include "net/ws_protocol.hpp"

namespace sluice::net {

/// Deepgram's live path, where its SDKs connect (`{url}/v1/listen?...`).
inline constexpr std::string_view deepgram_path = "/v1/listen";

std::unique_ptr<ws_protocol> make_deepgram_protocol(deepgram_options options);

}  // namespace sluice::net
