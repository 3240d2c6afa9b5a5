#pragma once
/// FreeSWITCH mod_audio_fork (drachtio-freeswitch-modules) and jambonz's `listen` verb: the
/// switch connects (subprotocol audio.drachtio.org / audio.jambonz.org), sends one text frame
/// of metadata, then binary frames of 16-bit little-endian PCM; stereo interleaves the caller
/// (channel 0) and the callee (channel 1).
///
/// Metadata: jambonz sends the call's attributes (callSid, from, to, ...) plus `sampleRate` and
/// `mixType`; mod_audio_fork sends whatever text the application gave `uuid_audio_fork ...
/// start <url> <mix-type> <rate> <metadata>` (the mix type and rate are FreeSWITCH's arguments,
/// not sent), so for it the session passes defaults read from the URL's query
/// (`?mixType=stereo&sampleRate=16000`). A metadata `sampleRate`/`mixType` wins over them.
/// Rates: 8000, 16000, 24000, 32000, 48000, 64000 Hz. Labels: mono -> "caller", mixed ->
/// "mixed", stereo -> "caller", "callee". External id: callSid, call_sid, callId, uuid.
///
/// Later text frames (mod_audio_fork's send_text, jambonz's DTMF with passDtmf
/// {"event":"dtmf","dtmf":"5"}) become call events ("dtmf" with {"digit"}, else "text" with the
/// JSON or {"text"}). A zero-length binary frame ends the audio; so does the switch's close.
/// Results go back as {"type":"transcription","data":{"channel","label","is_final",
/// "utterance","text","start_ms","end_ms","words"}} (the switch raises an event with `data`).
/// Errors (binary before the metadata; jambonz metadata that is not a JSON object; a bad
/// sampleRate or mixType) are sent as {"type":"error","data":{"reason"}}, then the close.

#include <memory>
#include <string>

#include "net/switches/interleave.hpp"
#include "net/switches/switch_protocol.hpp"

namespace sluice::net::switches {

enum class fork_flavour { audio_fork, jambonz };

/// Defaults for what the metadata may not say.
struct fork_defaults {
  int sample_rate = 8000;
  std::string mix_type = "mono";
};

class fork_protocol : public switch_protocol {
 public:
  fork_protocol(fork_flavour flavour, fork_defaults defaults);
  std::string_view source() const override;
  switch_step on_text(std::string_view text) override;
  switch_step on_binary(std::span<const uint8_t> bytes) override;
  std::vector<std::string> on_result(int index, const actors::transcript_event& ev) override;
  drained_step on_drained() override { return {}; }

 private:
  switch_step start(std::string_view text);
  switch_step error(close_code code, const std::string& reason) const;

  fork_flavour flavour_;
  fork_defaults defaults_;
  bool started_ = false, ended_ = false, stereo_ = false;
  std::vector<std::string> labels_;
  deinterleaver split_{2};
};

}  // namespace sluice::net::switches
