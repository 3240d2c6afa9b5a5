#pragma once
/// The FunASR runtime protocol's replies for one stream (PROTOCOLS.md). Pure: events in, JSON
/// out.
///
/// FunASR's clients append: online / 2pass-online messages carry only new text, and a
/// 2pass-offline or offline message is a sentence the client appends to the sentences before
/// it (2pass clients then drop the streamed text of that sentence). So:
/// - online text is sent a word at a time once it is stable: the words a partial shares with the
///   previous partial of its utterance, never its last word (which may still grow: "o" ->
///   "northwind"), and the rest at the final. A word already sent cannot be taken back: when a
///   final still revises one, online mode keeps the sent words and sends only the final's words
///   past as many (2pass's offline sentence carries the revision).
/// - each sentence after the first, and the online text of each utterance after the first,
///   starts with a space, so that the appended text reads as words.
/// - the last reply has is_final and is_end true (the end-of-input acknowledgement the 2026
///   clients wait for; older ones stop at is_final).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

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
  /// The last reply of the stream: is_final and is_end true, text empty.
  nlohmann::json last() const;

 private:
  std::string reply_mode(bool final) const;
  std::optional<nlohmann::json> online(const actors::transcript_event& ev);

  std::string mode_, wav_name_;
  bool itn_ = true;
  std::map<int64_t, std::size_t> sent_words_;  ///< utterance -> words already sent online
  std::map<int64_t, std::vector<std::string>> previous_partial_;  ///< utterance -> its last partial's words
  bool online_sent_ = false;                   ///< any online text sent yet (for the space)
  bool sentence_sent_ = false;                 ///< any offline sentence sent yet (for the space)
};

}  // namespace sluice::net
