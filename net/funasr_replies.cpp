#include "net/funasr_replies.hpp"

namespace sluice::net {

using json = nlohmann::json;

std::string funasr_replies::reply_mode(bool final) const {
  if (mode_ == "2pass") return final ? "2pass-offline" : "2pass-online";
  return mode_;
}

std::optional<json> funasr_replies::on_event(const actors::transcript_event& ev) {
  auto& prev = partial_[ev.utterance];
  if (!ev.is_final || mode_ == "online") {
    if (mode_ == "offline") return std::nullopt;
    // Online messages carry the text new since the last one of this utterance.
    std::string delta = ev.text.rfind(prev, 0) == 0 ? ev.text.substr(prev.size()) : ev.text;
    prev = ev.text;
    if (ev.is_final) partial_.erase(ev.utterance);
    if (delta.empty()) return std::nullopt;
    return json{{"mode", reply_mode(false)}, {"wav_name", wav_name_}, {"text", delta}, {"is_final", false}};
  }
  partial_.erase(ev.utterance);
  // "timestamp" is a JSON-encoded string of [start, end] pairs, as FunASR's server sends it.
  json ts_list = json::array();
  for (const auto& w : ev.words) ts_list.push_back({w.start_ms, w.end_ms});
  json sent = {{"text_seg", ev.text}, {"punc", ""}, {"start", ev.start_ms}, {"end", ev.end_ms}, {"ts_list", ts_list}};
  return json{{"mode", reply_mode(true)},
              {"wav_name", wav_name_},
              {"text", ev.text},
              {"is_final", false},
              {"timestamp", ts_list.dump()},
              {"stamp_sents", json::array({sent})}};
}

json funasr_replies::last() const {
  return json{{"mode", reply_mode(true)}, {"wav_name", wav_name_}, {"text", ""}, {"is_final", true}, {"is_end", true}};
}

}  // namespace sluice::net
