#include "net/protocols/deepgram_rest.hpp"

#include <algorithm>

#include <openssl/evp.h>

#include "net/hex.hpp"

namespace sluice::net {
namespace {

using json = nlohmann::json;

constexpr double ms_per_s = 1000.0;

// The array at `key` of object `j`, or an empty one.
const json& array_at(const json& j, const char* key) {
  static const json empty = json::array();
  if (!j.is_object()) return empty;
  const auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty;
}

double number_at(const json& j, const char* key) {
  if (!j.is_object()) return 0;
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0;
}

std::string string_at(const json& j, const char* key) {
  if (!j.is_object()) return {};
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A segment of channel `channel` of the document.
struct segment {
  int channel = 0;
  const json* seg = nullptr;
  double start_ms = 0;
};

// Deepgram's words of one segment: the spoken words, each with its display token when the
// display form pairs one token per word.
json words_of(const json& seg, bool pretty) {
  const json& words = array_at(seg, "words");
  const json& display = array_at(seg, "display_words");
  const bool pair = pretty && display.size() == words.size();
  json out = json::array();
  for (std::size_t k = 0; k < words.size(); ++k) {
    const std::string word = string_at(words[k], "word");
    out.push_back({{"word", word},
                   {"start", number_at(words[k], "start_ms") / ms_per_s},
                   {"end", number_at(words[k], "end_ms") / ms_per_s},
                   {"confidence", number_at(words[k], "confidence")},
                   {"punctuated_word", pair ? string_at(display[k], "word") : word}});
  }
  return out;
}

std::string transcript_of(const json& seg, bool pretty) {
  const std::string display = string_at(seg, "display_text");
  return pretty && !display.empty() ? display : string_at(seg, "text");
}

double mean_confidence(const json& words) {
  if (words.empty()) return 0;
  double sum = 0;
  for (const auto& w : words) sum += number_at(w, "confidence");
  return sum / static_cast<double>(words.size());
}

// One alternative made of `segs` (in order). `merged`: segments of several channels, whose words
// are put in time order and make the transcript, as words of mixed audio would.
json alternative(const std::vector<segment>& segs, bool pretty, bool merged) {
  std::string text;
  json words = json::array();
  for (const auto& s : segs) {
    const std::string t = transcript_of(*s.seg, pretty);
    if (!t.empty()) text += (text.empty() ? "" : " ") + t;
    for (auto& w : words_of(*s.seg, pretty)) words.push_back(std::move(w));
  }
  if (merged) {
    auto by_start = [](const json& a, const json& b) { return number_at(a, "start") < number_at(b, "start"); };
    std::vector<json> sorted(words.begin(), words.end());
    std::stable_sort(sorted.begin(), sorted.end(), by_start);
    words = json::array();
    for (auto& w : sorted) words.push_back(std::move(w));
    // The transcript: the written tokens in time order (display form: "$49" stands for three
    // spoken words, so tokens, not words), else the spoken words.
    std::vector<std::pair<double, std::string>> tokens;
    for (const auto& s : segs) {
      const json& display = array_at(*s.seg, "display_words");
      for (const auto& t : pretty && !display.empty() ? display : array_at(*s.seg, "words"))
        if (const auto w = string_at(t, "word"); !w.empty()) tokens.emplace_back(number_at(t, "start_ms"), w);
    }
    std::stable_sort(tokens.begin(), tokens.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    text.clear();
    for (const auto& [start, t] : tokens) text += (text.empty() ? "" : " ") + t;
  }
  return {{"transcript", text}, {"confidence", mean_confidence(words)}, {"words", words}};
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1) return {};
  return to_hex(md, len);
}

json deepgram_model_info() { return {{"name", deepgram_model_name}, {"version", "1"}, {"arch", "sluice-moe-ctc"}}; }

json deepgram_prerecorded(const json& doc, const deepgram_options& o, const deepgram_request_info& info) {
  const bool pretty = o.punctuate || o.smart_format;
  const json& channels = array_at(doc, "channels");
  std::vector<std::vector<segment>> by_channel(channels.size());
  std::vector<segment> all;
  for (std::size_t c = 0; c < channels.size(); ++c)
    for (const auto& s : array_at(channels[c], "segments")) {
      segment seg{static_cast<int>(c), &s, number_at(s, "start_ms")};
      by_channel[c].push_back(seg);
      all.push_back(seg);
    }
  // Stable: segments that start together keep their channel order.
  std::stable_sort(all.begin(), all.end(), [](const segment& a, const segment& b) { return a.start_ms < b.start_ms; });

  const bool merged = !o.multichannel && channels.size() > 1;
  json result_channels = json::array();
  if (!merged) {
    for (const auto& segs : by_channel)
      result_channels.push_back({{"alternatives", json::array({alternative(segs, pretty, false)})}});
  } else {
    result_channels.push_back({{"alternatives", json::array({alternative(all, pretty, true)})}});
  }
  json results{{"channels", result_channels}};
  if (o.utterances) {
    json utterances = json::array();
    for (std::size_t k = 0; k < all.size(); ++k) {
      const json& s = *all[k].seg;
      json words = words_of(s, pretty);
      utterances.push_back({{"id", info.request_id + "-" + std::to_string(k)},
                            {"start", number_at(s, "start_ms") / ms_per_s},
                            {"end", number_at(s, "end_ms") / ms_per_s},
                            {"channel", merged ? 0 : all[k].channel},
                            {"confidence", mean_confidence(words)},
                            {"transcript", transcript_of(s, pretty)},
                            {"words", words}});
    }
    results["utterances"] = std::move(utterances);
  }
  json metadata{{"transaction_key", "deprecated"},
                {"request_id", info.request_id},
                {"sha256", info.sha256},
                {"created", info.created},
                {"duration", number_at(doc, "duration_s")},
                {"channels", result_channels.size()},
                {"models", json::array({deepgram_model_name})},
                {"model_info", {{deepgram_model_name, deepgram_model_info()}}}};
  if (const json& errors = array_at(doc, "errors"); !errors.empty()) {
    json warnings = json::array();
    for (const auto& e : errors)
      warnings.push_back({{"type", "error"}, {"message", e.is_string() ? e.get<std::string>() : e.dump()}});
    metadata["warnings"] = std::move(warnings);
  }
  return {{"metadata", metadata}, {"results", results}};
}

json deepgram_error(int status, const std::string& message, const std::string& request_id) {
  const char* code = status == 400   ? "Bad Request"
                     : status == 401 ? "INVALID_AUTH"
                     : status == 413 ? "Payload Too Large"
                     : status == 415 ? "Unsupported Media Type"
                     : status == 422 ? "Unprocessable Entity"
                     : status == 429 ? "TOO_MANY_REQUESTS"
                     : status == 503 ? "Service Unavailable"
                                     : "Internal Server Error";
  return {{"err_code", code}, {"err_msg", message}, {"request_id", request_id}};
}

}  // namespace sluice::net
