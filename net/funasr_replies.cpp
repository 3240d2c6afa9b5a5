#include "net/funasr_replies.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

namespace sluice::net {

using json = nlohmann::json;

namespace {

std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(std::move(w));
  return out;
}

}  // namespace

std::string funasr_replies::reply_mode(bool final) const {
  if (mode_ == "2pass") return final ? "2pass-offline" : "2pass-online";
  return mode_;
}

std::optional<json> funasr_replies::online(const actors::transcript_event& ev) {
  auto words = words_of(ev.text);
  auto& sent = sent_words_[ev.utterance];
  auto& previous = previous_partial_[ev.utterance];
  // A final's words are all settled. A partial's are stable as far as the previous partial had
  // the same words, and never its last word, which may still grow.
  std::size_t stable = words.size();
  if (!ev.is_final) {
    std::size_t common = 0;
    while (common < words.size() && common < previous.size() && words[common] == previous[common]) ++common;
    stable = std::min(common, words.empty() ? std::size_t{0} : words.size() - 1);
  }
  std::string delta;
  for (std::size_t i = sent; i < stable; ++i) {
    const bool first_of_stream = !online_sent_ && delta.empty();
    if (!first_of_stream) delta += ' ';
    delta += words[i];
  }
  if (stable > sent) sent = stable;
  previous = std::move(words);
  if (ev.is_final) {
    sent_words_.erase(ev.utterance);
    previous_partial_.erase(ev.utterance);
  }
  if (delta.empty()) return std::nullopt;
  online_sent_ = true;
  return json{{"mode", reply_mode(false)}, {"wav_name", wav_name_}, {"text", delta}, {"is_final", false}};
}

std::optional<json> funasr_replies::on_event(const actors::transcript_event& ev) {
  if (mode_ == "online") return online(ev);
  if (!ev.is_final) return mode_ == "offline" ? std::nullopt : online(ev);
  sent_words_.erase(ev.utterance);
  previous_partial_.erase(ev.utterance);
  if (mode_ == "2pass") online_sent_ = sentence_sent_ || !ev.text.empty();  // the sentence replaces it
  if (ev.text.empty()) return std::nullopt;
  // "timestamp" is a JSON-encoded string of [start, end] pairs, as FunASR's server sends it.
  // With itn (FunASR's default) the sentence is the display form: numbers written, punctuated.
  // (An event without a display form, e.g. with [postproc] off, shows its words as spoken.)
  const bool display = itn_ && !ev.display_text.empty();
  const auto& shown = display ? ev.display_text : ev.text;
  const auto& words = display ? ev.display_words : ev.words;
  json ts_list = json::array();
  for (const auto& w : words) ts_list.push_back({w.start_ms, w.end_ms});
  json sent = {{"text_seg", shown}, {"punc", ""}, {"start", ev.start_ms}, {"end", ev.end_ms}, {"ts_list", ts_list}};
  const std::string text = (sentence_sent_ ? " " : "") + shown;
  sentence_sent_ = true;
  return json{{"mode", reply_mode(true)},
              {"wav_name", wav_name_},
              {"text", text},
              {"is_final", false},
              {"timestamp", ts_list.dump()},
              {"stamp_sents", json::array({sent})}};
}

json funasr_replies::last() const {
  return json{{"mode", reply_mode(true)}, {"wav_name", wav_name_}, {"text", ""}, {"is_final", true}, {"is_end", true}};
}

}  // namespace sluice::net
