#pragma once
/// Genesys Cloud AudioHook (protocol version 2; purecloudlabs/audiohook-reference-implementation
/// app/audiohook/src/protocol). Genesys connects with headers Audiohook-Organization-Id,
/// Audiohook-Correlation-Id, Audiohook-Session-Id and X-API-KEY (checked by the server's gate
/// as any API key). Every JSON message has "version":"2", "id" (the session), "type", "seq"
/// and "parameters"; client messages add "serverseq" and "position" ("PT12.34S"), server
/// messages "clientseq".
///
/// Client -> server: open {organizationId, conversationId, participant, media: offers of
/// {type "audio", format "PCMU"|"L16", channels ["external","internal"], rate 8000}}; ping;
/// update {language}; paused; resumed {start, discarded}; discarded; error {code, message};
/// close {reason}. Binary frames: the audio of the chosen media, interleaved when stereo.
/// Server -> client: opened {media: [the chosen one]}; pong; updated; event {entities:
/// [{type "transcript", data {id, channel, isFinal, offset, duration, alternatives:
/// [{confidence, languages, interpretations: [{type "display", transcript, tokens}]}]}}]};
/// closed; disconnect {reason "error", info} before closing a connection that broke the
/// protocol.
///
/// Chosen media: PCMU 8 kHz, stereo [external, internal] when offered (the call's channels
/// "customer" = external = 0 and "agent" = internal = 1), else a mono PCMU offer. The call:
/// source "audiohook", external id the conversationId, metadata {organizationId,
/// conversationId, participant, sessionId, language, customConfig}. update merges its language
/// into the metadata; paused, resumed, discarded and error become call events. close ends the
/// audio; once the finals are out the server sends closed and closes.
///
/// Errors (disconnect, then close 1008): a message that is not a JSON object, a version other
/// than "2", a seq that is not the previous one + 1, a session id that changes, a message
/// before open (or a second open), audio before opened, an unknown type, no PCMU offer.

#include <random>

#include "net/switches/interleave.hpp"
#include "net/switches/switch_protocol.hpp"

namespace sluice::net::switches {

class audiohook_protocol : public switch_protocol {
 public:
  /// `session_id`: the Audiohook-Session-Id header (may be empty: then the open's id is used).
  explicit audiohook_protocol(std::string session_id);
  std::string_view source() const override { return "audiohook"; }
  switch_step on_text(std::string_view text) override;
  switch_step on_binary(std::span<const uint8_t> bytes) override;
  std::vector<std::string> on_result(int index, const actors::transcript_event& ev) override;
  drained_step on_drained() override;

 private:
  switch_step open(const nlohmann::json& msg);
  switch_step error(const std::string& reason);
  std::string reply(const std::string& type, nlohmann::json parameters);
  std::string new_uuid();

  std::string session_id_;
  long long client_seq_ = 0, server_seq_ = 0;
  bool opened_ = false, closing_ = false, stereo_ = false;
  std::vector<std::string> channel_names_;  // "external", "internal", in channel order
  std::string language_;
  deinterleaver split_{1};
  std::mt19937_64 rng_{std::random_device{}()};
};

/// Seconds as an ISO 8601 duration, "PT1.25S".
std::string iso_duration(int64_t ms);

}  // namespace sluice::net::switches
