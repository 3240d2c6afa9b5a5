#pragma once
/// The FunASR runtime protocol's replies for one stream (PROTOCOLS.md): online modes send the
/// text new since the last message of the utterance, offline modes the sentence with its
/// timestamps, and the last reply has is_final true. Pure: events in, JSON out.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/messages.hpp"

namespace sluice::net {

class funasr_replies {
 public:
  /// `mode`: online | offline | 2pass; `wav_name` is echoed in every reply.
  funasr_replies(std::string mode, std::string wav_name) : mode_(std::move(mode)), wav_name_(std::move(wav_name)) {}

  /// The reply for one transcript event (no error set), or nothing when this mode sends none.
  std::optional<nlohmann::json> on_event(const actors::transcript_event& ev);
  /// The last reply of the stream: is_final and is_end true (the end-of-input acknowledgement
  /// the 2026 clients wait for; older ones stop at is_final).
  nlohmann::json last() const;

 private:
  std::string reply_mode(bool final) const;

  std::string mode_, wav_name_;
  std::map<int64_t, std::string> partial_;  ///< utterance -> text already sent online
};

}  // namespace sluice::net
