#include "net/protocols/deepgram_query.hpp"

#include <charconv>
#include <cmath>

#include "net/http_query.hpp"
#include "net/json_fields.hpp"
#include "net/ws_messages.hpp"

namespace sluice::net {
namespace {

constexpr int min_rate = 8000, max_rate = 48000;
constexpr int max_alternatives = 20;  // moe::decoder_options::max_alternatives
constexpr double default_boost = 3.0;  // /v1/stream's hotword weight when none is given
constexpr double max_boost = 100.0;    // moe::context_graph::max_weight
constexpr int min_utterance_end_ms = 1000, max_utterance_end_ms = 60000;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// application/x-www-form-urlencoded: %XX is a byte, '+' a space.
result<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%') {
      const int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1, lo = hi >= 0 ? hex_value(s[i + 2]) : -1;
      if (lo < 0) return fail(errc::invalid_argument, "the query string has a '%' that is not followed by two hex digits");
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  if (valid_utf8(out) != out) return fail(errc::invalid_argument, "the query string is not valid UTF-8");
  return out;
}

result<bool> boolean(const std::string& key, const std::string& v) {
  if (v == "true") return true;
  if (v == "false") return false;
  return fail(errc::invalid_argument, key + " must be true or false");
}

// A keywords entry "phrase" or "phrase:boost" as a hotword line "phrase weight".
result<std::string> keyword(const std::string& v) {
  std::string phrase = v;
  double boost = default_boost;
  if (const auto colon = v.rfind(':'); colon != std::string::npos) {
    phrase = v.substr(0, colon);
    const std::string b = v.substr(colon + 1);
    const auto [end, ec] = std::from_chars(b.data(), b.data() + b.size(), boost);
    if (b.empty() || ec != std::errc() || end != b.data() + b.size() || !std::isfinite(boost) || boost < 0 ||
        boost > max_boost)
      return fail(errc::invalid_argument, "a keywords boost must be a number in [0, 100] (sluice raises words, it "
                                          "does not suppress them)");
  }
  if (phrase.empty() || phrase.size() > max_hotword_bytes)
    return fail(errc::invalid_argument,
                "keywords and keyterm entries must be 1 to " + std::to_string(max_hotword_bytes) + " bytes");
  return phrase + " " + std::to_string(boost);
}

bool english(std::string_view lang) {
  if (lang.size() < 2 || (lang[0] != 'e' && lang[0] != 'E') || (lang[1] != 'n' && lang[1] != 'N')) return false;
  return lang.size() == 2 || lang[2] == '-' || lang[2] == '_';
}

}  // namespace

result<deepgram_options> parse_deepgram_query(std::string_view target, bool live) {
  deepgram_options o;
  bool have_rate = false;
  const auto q = target.find('?');
  std::string_view query = q == std::string_view::npos ? std::string_view{} : target.substr(q + 1);
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (kv.empty()) continue;
    const auto eq = kv.find('=');
    auto key = percent_decode(kv.substr(0, eq));
    if (!key) return tl::unexpected(key.error());
    auto value = percent_decode(eq == std::string_view::npos ? std::string_view{} : kv.substr(eq + 1));
    if (!value) return tl::unexpected(value.error());
    const std::string& k = *key;
    const std::string& v = *value;
    if (k == "encoding") {
      if (v != "linear16" && v != "mulaw" && v != "alaw")
        return fail(errc::invalid_argument, "encoding must be linear16, mulaw or alaw (raw audio; containers and "
                                            "other codecs are not taken here: POST files to /v1/transcribe)");
      o.encoding = v;
    } else if (k == "sample_rate") {
      auto r = query_int("sample_rate", v, min_rate, max_rate);
      if (!r) return tl::unexpected(r.error());
      o.sample_rate = static_cast<int>(*r);
      have_rate = true;
    } else if (k == "channels") {
      auto c = query_int("channels", v, 1, 2);
      if (!c) return tl::unexpected(c.error());
      o.channels = static_cast<int>(*c);
    } else if (k == "multichannel" || k == "interim_results" || k == "punctuate" || k == "smart_format" ||
               k == "vad_events" || k == "utterances") {
      auto b = boolean(k, v);
      if (!b) return tl::unexpected(b.error());
      (k == "multichannel"      ? o.multichannel
       : k == "interim_results" ? o.interim_results
       : k == "punctuate"       ? o.punctuate
       : k == "smart_format"    ? o.smart_format
       : k == "vad_events"      ? o.vad_events
                                : o.utterances) = *b;
    } else if (k == "keywords" || k == "keyterm") {
      if (o.hotwords.size() >= max_hotwords)
        return fail(errc::invalid_argument, "at most " + std::to_string(max_hotwords) + " keywords and keyterms");
      // A keyterm is a phrase without a boost; a keywords entry may end in ":boost".
      auto h = k == "keywords" ? keyword(v) : keyword(v + ":" + std::to_string(default_boost));
      if (!h) return tl::unexpected(h.error());
      o.hotwords.push_back(std::move(*h));
    } else if (k == "alternatives") {
      auto a = query_int("alternatives", v, 1, max_alternatives);
      if (!a) return tl::unexpected(a.error());
      o.alternatives = static_cast<int>(*a);
    } else if (k == "utterance_end_ms") {
      auto u = query_int("utterance_end_ms", v, min_utterance_end_ms, max_utterance_end_ms);
      if (!u) return tl::unexpected(u.error());
      o.utterance_end_ms = static_cast<int>(*u);
    } else if (k == "language") {
      if (!english(v))
        return fail(errc::invalid_argument, "language must be English (en, en-US, ...): sluice's model is English");
      o.language = v;
    }
  }
  if (o.encoding.empty() && live)
    return fail(errc::invalid_argument, "encoding is required: linear16, mulaw or alaw (raw audio)");
  if (!o.encoding.empty() && !have_rate) return fail(errc::invalid_argument, "sample_rate is required with encoding");
  if (o.encoding.empty() && have_rate)
    return fail(errc::invalid_argument, "sample_rate is for raw audio: name its encoding too (a WAV or Ogg file "
                                        "says its own rate)");
  if (!live && o.alternatives > 1)
    return fail(errc::invalid_argument, "alternatives are served on live streams (the /v1/listen WebSocket); a "
                                        "file's transcript has one reading");
  if (o.channels == 2 && !o.multichannel && live)
    return fail(errc::invalid_argument, "channels=2 needs multichannel=true (sluice transcribes each channel on "
                                        "its own; it does not mix them)");
  return o;
}

}  // namespace sluice::net
