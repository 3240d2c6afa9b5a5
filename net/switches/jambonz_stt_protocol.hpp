#pragma once
/// jambonz's custom speech-to-text vendor API (docs.jambonz.org, "Adding custom speech
/// vendors"): jambonz connects with `Authorization: Bearer <api key>` (checked by the server's
/// gate against the auth keys), sends {"type":"start","language","format":"raw",
/// "encoding":"LINEAR16","sampleRateHz","interimResults"}, binary PCM16 frames, and
/// {"type":"stop"}; jambonz does not close the socket after stop: the server does, once the
/// last transcription is out.
///
/// Replies: {"type":"transcription","is_final","alternatives":[{"transcript","confidence"}],
/// "language","channel":1} (partials only when interimResults); errors {"type":"error",
/// "error": reason} before the close. The call: source "jambonz_stt", one channel "caller",
/// metadata {language, interimResults}.
/// Errors: binary before start; a first message that is not a start; format other than raw or
/// encoding other than LINEAR16 (1003); a sample rate that is not a whole number in
/// [8000, 48000]; an unknown message type; a second start.

#include "net/switches/switch_protocol.hpp"

namespace sluice::net::switches {

class jambonz_stt_protocol : public switch_protocol {
 public:
  std::string_view source() const override { return "jambonz_stt"; }
  switch_step on_text(std::string_view text) override;
  switch_step on_binary(std::span<const uint8_t> bytes) override;
  std::vector<std::string> on_result(int index, const actors::transcript_event& ev) override;
  drained_step on_drained() override { return {}; }

 private:
  switch_step start(const nlohmann::json& j);

  bool started_ = false, stopped_ = false, interim_ = false;
  std::string language_;
};

}  // namespace sluice::net::switches
