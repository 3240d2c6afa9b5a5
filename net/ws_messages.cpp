#include "net/ws_messages.hpp"

#include <algorithm>
#include <cctype>

#include "dsp/pcm.hpp"
#include "moe/decoder/context_graph.hpp"
#include "moe/decoder/decoder_options.hpp"
#include "net/json_fields.hpp"

namespace sluice::net {

namespace {

constexpr int64_t default_sample_rate = 16000;
constexpr double default_hotword_weight = 3.0;
constexpr double max_funasr_weight = moe::context_graph::max_weight / funasr_weight_scale;

#define SLUICE_TRY(var, expr)                       \
  auto var##_r = (expr);                            \
  if (!var##_r) return tl::unexpected(var##_r.error()); \
  auto var = std::move(*var##_r)

// "phrase weight", the form the channel takes hotwords in.
std::string hotword_line(const std::string& phrase, double weight) { return phrase + " " + std::to_string(weight); }

result<void> check_hotword_count(std::size_t n) {
  if (n > max_hotwords)
    return fail(errc::invalid_argument, "\"hotwords\" has " + std::to_string(n) + " entries; at most " +
                                            std::to_string(max_hotwords) + " are allowed");
  return {};
}

result<std::string> checked_phrase(const std::string& phrase) {
  if (phrase.size() > max_hotword_bytes)
    return fail(errc::invalid_argument, "a hotword is " + std::to_string(phrase.size()) + " bytes long; at most " +
                                            std::to_string(max_hotword_bytes) + " are allowed");
  return phrase;
}

// sluice: an array of "phrase [weight]" strings or {"phrase": "...", "weight": w} objects.
result<std::vector<std::string>> sluice_hotwords(const json& j) {
  const auto it = j.find("hotwords");
  if (it == j.end()) return std::vector<std::string>{};
  if (!it->is_array())
    return fail(errc::invalid_argument, "\"hotwords\" must be an array of strings or {\"phrase\", \"weight\"} objects");
  if (auto ok = check_hotword_count(it->size()); !ok) return tl::unexpected(ok.error());
  std::vector<std::string> out;
  for (const auto& h : *it) {
    if (h.is_string()) {
      SLUICE_TRY(p, checked_phrase(h.get<std::string>()));
      out.push_back(std::move(p));
    } else if (h.is_object()) {
      SLUICE_TRY(phrase, get_string(h, "phrase", {}, max_hotword_bytes));
      if (phrase.empty()) return fail(errc::invalid_argument, "a hotword object needs a non-empty \"phrase\" string");
      SLUICE_TRY(w, get_number(h, "weight", default_hotword_weight, 0.0, moe::context_graph::max_weight));
      out.push_back(hotword_line(phrase, w));
    } else {
      return fail(errc::invalid_argument, "\"hotwords\" entries must be strings or {\"phrase\", \"weight\"} objects");
    }
  }
  return out;
}

// FunASR: a string holding a JSON object {"phrase": weight}, a comma/newline list, or (when it
// has neither commas nor newlines) space-separated words, as FunASR's clients send them.
result<std::vector<std::string>> funasr_hotwords(const std::string& s) {
  std::vector<std::string> out;
  if (auto j = parse_object(s)) {
    if (auto ok = check_hotword_count(j->size()); !ok) return tl::unexpected(ok.error());
    for (const auto& [phrase, w] : j->items()) {
      SLUICE_TRY(p, checked_phrase(phrase));
      if (!w.is_number() || !(w.get<double>() >= 0 && w.get<double>() <= max_funasr_weight))
        return fail(errc::invalid_argument, "\"hotwords\": the weight of each phrase must be a number in [0, " +
                                                std::to_string(static_cast<int>(max_funasr_weight)) + "]");
      out.push_back(hotword_line(p, w.get<double>() * funasr_weight_scale));
    }
    return out;
  }
  const bool listed = s.find_first_of(",\n") != std::string::npos;
  std::string cur;
  for (char c : s + ",") {
    if (c == ',' || c == '\n' || (!listed && (c == ' ' || c == '\t'))) {
      const auto first = cur.find_first_not_of(' ');
      if (first != std::string::npos) {
        SLUICE_TRY(p, checked_phrase(cur.substr(first, cur.find_last_not_of(' ') + 1 - first)));
        out.push_back(std::move(p));
        if (auto ok = check_hotword_count(out.size()); !ok) return tl::unexpected(ok.error());
      }
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

result<json> object_of(std::string_view text) {
  auto j = parse_object(text);
  if (!j && j.error().code != errc::internal) return fail(errc::corrupt, j.error().message);
  return j;
}

}  // namespace

result<actors::channel_request> parse_sluice_start(std::string_view text) {
  SLUICE_TRY(j, object_of(text));
  actors::channel_request req;
  SLUICE_TRY(type, get_string(j, "type", "start", max_name_bytes));
  if (type != "start") return fail(errc::invalid_argument, "the first message must be {\"type\":\"start\", ...}");
  SLUICE_TRY(rate, get_int(j, "sample_rate", default_sample_rate, dsp::min_sample_rate, dsp::max_sample_rate));
  req.sample_rate = static_cast<int>(rate);
  SLUICE_TRY(codec, get_string(j, "encoding", "pcm_s16le", max_name_bytes));
  if (codec == "f32") return fail(errc::invalid_argument, "encoding f32 is for in-process use; send pcm_s16le");
  if (codec != "pcm_s16le" && codec != "mulaw" && codec != "alaw" && codec != "opus")
    return fail(errc::invalid_argument, "\"encoding\" must be one of pcm_s16le, mulaw, alaw, opus");
  req.codec = std::move(codec);
  SLUICE_TRY(channels, get_int(j, "channels", 1, 1, dsp::max_channels));
  if (channels != 1)
    return fail(errc::invalid_argument, "channels = " + std::to_string(channels) +
                                            ": one stream carries one channel; open a stream per channel");
  SLUICE_TRY(partials, get_bool(j, "partials", true));
  req.partials = partials;
  SLUICE_TRY(hotwords, sluice_hotwords(j));
  req.hotwords = std::move(hotwords);
  SLUICE_TRY(alternatives, get_int(j, "alternatives", -1, 0, moe::decoder_options::max_alternatives));
  req.alternatives = static_cast<int>(alternatives);
  SLUICE_TRY(tenant, get_string(j, "tenant", "", max_tenant_bytes));
  for (const char c : tenant)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      return fail(errc::invalid_argument, "\"tenant\" may hold only letters, digits, '-', '_' and '.'");
  req.tenant = std::move(tenant);
  return req;
}

result<funasr_start> parse_funasr_start(std::string_view text) {
  SLUICE_TRY(j, object_of(text));
  funasr_start out;
  SLUICE_TRY(mode, get_string(j, "mode", "2pass", max_name_bytes));
  if (mode != "online" && mode != "offline" && mode != "2pass")
    return fail(errc::invalid_argument, "\"mode\" must be online, offline or 2pass");
  out.mode = std::move(mode);
  SLUICE_TRY(wav_name, get_string(j, "wav_name", "sluice", max_name_bytes));
  out.wav_name = std::move(wav_name);
  SLUICE_TRY(itn, get_bool(j, "itn", true));
  out.itn = itn;
  SLUICE_TRY(rate, get_int(j, "audio_fs", default_sample_rate, dsp::min_sample_rate, dsp::max_sample_rate));
  out.request.sample_rate = static_cast<int>(rate);
  // FunASR's browser client sends "PCM" in upper case.
  SLUICE_TRY(fmt, get_string(j, "wav_format", "pcm", max_name_bytes));
  if (!iequals(fmt, "pcm"))
    return fail(errc::invalid_argument, "\"wav_format\" must be pcm (16-bit little-endian); other formats are not streamed");
  out.request.codec = "pcm_s16le";
  out.request.partials = out.mode != "offline";
  SLUICE_TRY(hotwords, get_string(j, "hotwords", "", max_funasr_hotwords_bytes));
  SLUICE_TRY(lines, funasr_hotwords(hotwords));
  out.request.hotwords = std::move(lines);
  SLUICE_TRY(speaking, get_bool(j, "is_speaking", true));
  SLUICE_TRY(finished, get_bool(j, "is_finished", false));
  out.end_requested = !speaking || finished;
  return out;
}

result<void> parse_sluice_end(std::string_view text) {
  SLUICE_TRY(j, object_of(text));
  const auto type = get_string(j, "type", "", max_name_bytes);
  if (!type || *type != "end") return fail(errc::invalid_argument, "expected {\"type\":\"end\"} or binary audio");
  return {};
}

result<void> parse_funasr_end(std::string_view text) {
  SLUICE_TRY(j, object_of(text));
  constexpr const char* expected = "expected {\"is_speaking\": false}, {\"is_finished\": true} or binary audio";
  const auto speaking = get_bool(j, "is_speaking", true);
  const auto finished = get_bool(j, "is_finished", false);
  if (!speaking) return fail(errc::invalid_argument, "\"is_speaking\" must be true or false; " + std::string(expected));
  if (!finished) return fail(errc::invalid_argument, "\"is_finished\" must be true or false; " + std::string(expected));
  if (*speaking && !*finished) return fail(errc::invalid_argument, expected);
  return {};
}

}  // namespace sluice::net
