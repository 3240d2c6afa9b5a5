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
  /// `itn`: finals carry the display form (numbers written, punctuated, cased) rather than the
  /// words as spoken; online deltas are always the spoken words (each extends the last).
  funasr_replies(std::string mode, std::string wav_name, bool itn = true)
      : mode_(std::move(mode)), wav_name_(std::move(wav_name)), itn_(itn) {}

  /// The reply for one transcript event (no error set), or nothing when this mode sends none.
  std::optional<nlohmann::json> on_event(const actors::transcript_event& ev);
  /// The last reply of the stream (is_final true).
  nlohmann::json last() const;

 private:
  std::string reply_mode(bool final) const;

  std::string mode_, wav_name_;
  bool itn_ = true;
  std::map<int64_t, std::string> partial_;  ///< utterance -> text already sent online
};

}  // namespace sluice::net
