#pragma once
/// Twilio Media Streams (<Start><Stream> or <Connect><Stream>): Twilio connects and sends JSON
/// text frames only: `connected` {"protocol","version"}; `start` {"streamSid","start":
/// {"accountSid","callSid","tracks":["inbound","outbound"],"customParameters":{...},
/// "mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}; `media` every
/// 20 ms per track {"media":{"track":"inbound"|"outbound","chunk","timestamp","payload": base64
/// of 160 μ-law bytes}} (numbers as strings); `dtmf` {"dtmf":{"track","digit"}}; `mark`
/// {"mark":{"name"}}; `stop`. Every message carries "event", "sequenceNumber" and (after start)
/// "streamSid".
///
/// The call: source "twilio", external id the callSid, one channel per track in start's
/// `tracks` ("inbound" -> label "caller", "outbound" -> "callee"), metadata {streamSid,
/// accountSid, tracks, customParameters}; μ-law at 8 kHz. dtmf and mark become call events.
/// `stop` ends the audio. Nothing is sent back (Twilio accepts only media, mark and clear on a
/// bidirectional stream): results reach the call (GET /v1/calls, WS /v1/events).
/// Errors (a close with the reason; no error message exists in the protocol): a binary frame,
/// a frame that is not a JSON object, an unknown event, media before start, a second start, a
/// track not announced, a payload that is not base64, a mediaFormat other than audio/x-mulaw
/// 8000 Hz mono, streamSid differing from start's.

#include "net/switches/switch_protocol.hpp"
#include "net/base64.hpp"

namespace sluice::net::switches {

class twilio_protocol : public switch_protocol {
 public:
  std::string_view source() const override { return "twilio"; }
  switch_step on_text(std::string_view text) override;
  switch_step on_binary(std::span<const uint8_t> bytes) override;
  std::vector<std::string> on_result(int, const actors::transcript_event&) override { return {}; }
  drained_step on_drained() override { return {}; }

 private:
  switch_step start(const nlohmann::json& j);
  switch_step media(const nlohmann::json& j);
  int track_index(const std::string& track) const;

  bool started_ = false, stopped_ = false;
  std::string stream_sid_;
  std::vector<std::string> tracks_;
};

using net::decode_base64;
using net::encode_base64;

}  // namespace sluice::net::switches
