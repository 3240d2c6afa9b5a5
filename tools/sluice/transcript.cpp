// Output formats of `sluice transcribe`. Cues for subtitles are cut at sentence ends (moe/punct's
// splitter, on the marks the display words end with) and, within a long sentence, at word gaps,
// from the words' own times; channels of a call are merged in time order.

#include "tools/sluice/transcript.hpp"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "moe/punct/sentences.hpp"

namespace sluice::cli {
namespace {

// A cue longer than this (a long sentence, or words with no marks: the lexical form) is cut
// before the word that would pass it.
constexpr int64_t max_cue_ms = 7000;
constexpr std::size_t max_cue_chars = 84;

struct cue {
  int64_t start_ms, end_ms;
  std::string label, text;
};

std::string clock(int64_t ms, char frac_sep) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld%c%03lld", static_cast<long long>(ms / 3600000),
                static_cast<long long>(ms / 60000 % 60), static_cast<long long>(ms / 1000 % 60), frac_sep,
                static_cast<long long>(ms % 1000));
  return buf;
}

const std::vector<moe::word_info>& words_of(const transcript_segment& s, transcript_form form) {
  return form == transcript_form::display ? s.display_words : s.words;
}
const std::string& text_of(const transcript_segment& s, transcript_form form) {
  return form == transcript_form::display ? s.display_text : s.text;
}

std::vector<cue> make_cues(const file_transcript& t, transcript_form form) {
  std::vector<cue> cues;
  for (const auto& ch : t.channels) {
    for (const auto& seg : ch.segments) {
      const auto& words = words_of(seg, form);
      // The mark each word ends with ("calling." "[card]," "help?"), as the display form wrote it.
      std::vector<moe::punct::word_mark> marks(words.size());
      for (std::size_t i = 0; i < words.size(); ++i) {
        const char last = words[i].word.empty() ? 0 : words[i].word.back();
        if (last == '.' || last == ',' || last == '?') marks[i].mark = last;
      }
      for (const auto& sentence : moe::punct::split_sentences(marks)) {
        cue cur{words[sentence.begin].start_ms, words[sentence.begin].end_ms, ch.label, ""};
        for (std::size_t i = sentence.begin; i < sentence.end; ++i) {
          const auto& w = words[i];
          const bool too_long =
              w.end_ms - cur.start_ms > max_cue_ms || cur.text.size() + 1 + w.word.size() > max_cue_chars;
          if (!cur.text.empty() && too_long) {
            cues.push_back(cur);
            cur = cue{w.start_ms, w.end_ms, ch.label, ""};
          }
          cur.text += (cur.text.empty() ? "" : " ") + w.word;
          cur.end_ms = w.end_ms;
        }
        cues.push_back(cur);
      }
    }
  }
  std::stable_sort(cues.begin(), cues.end(), [](const cue& a, const cue& b) { return a.start_ms < b.start_ms; });
  return cues;
}

std::string cue_text(const cue& c) { return c.label.empty() ? c.text : c.label + ": " + c.text; }

nlohmann::json words_json(const std::vector<moe::word_info>& ws) {
  nlohmann::json words = nlohmann::json::array();
  for (const auto& w : ws)
    words.push_back({{"word", w.word}, {"start_ms", w.start_ms}, {"end_ms", w.end_ms}, {"confidence", w.confidence}});
  return words;
}

nlohmann::json to_json(const file_transcript& t) {
  nlohmann::json channels = nlohmann::json::array();
  for (const auto& ch : t.channels) {
    nlohmann::json segs = nlohmann::json::array();
    for (const auto& s : ch.segments) {
      nlohmann::json red = nlohmann::json::array();
      for (const auto& r : s.redactions) red.push_back({{"start_ms", r.start_ms}, {"end_ms", r.end_ms}, {"kind", r.kind}});
      nlohmann::json seg = {{"start_ms", s.start_ms},
                            {"end_ms", s.end_ms},
                            {"text", s.text},
                            {"words", words_json(s.words)},
                            {"display_text", s.display_text},
                            {"display_words", words_json(s.display_words)},
                            {"redactions", red}};
      if (!s.alternatives.empty()) {
        nlohmann::json alts = nlohmann::json::array();
        for (const auto& a : s.alternatives)
          alts.push_back({{"text", a.text},
                          {"display_text", a.display_text},
                          {"confidence", a.confidence},
                          {"words", words_json(a.words)}});
        seg["alternatives"] = std::move(alts);
      }
      segs.push_back(std::move(seg));
    }
    channels.push_back({{"channel", ch.channel}, {"label", ch.label}, {"segments", segs}});
  }
  return {{"file", t.path}, {"duration_s", t.duration_s}, {"input_sample_rate", t.input_sample_rate},
          {"channels", channels}};
}

}  // namespace

bool parse_transcript_format(const std::string& name, transcript_format& out) {
  if (name == "text") out = transcript_format::text;
  else if (name == "json") out = transcript_format::json;
  else if (name == "srt") out = transcript_format::srt;
  else if (name == "vtt") out = transcript_format::vtt;
  else return false;
  return true;
}

std::string render(const file_transcript& t, transcript_format fmt, transcript_form form) {
  std::string out;
  switch (fmt) {
    case transcript_format::json:
      return to_json(t).dump(2) + "\n";
    case transcript_format::text: {
      // One line per segment, channels merged in time order.
      std::vector<cue> lines;
      for (const auto& ch : t.channels)
        for (const auto& s : ch.segments)
          if (!text_of(s, form).empty()) lines.push_back({s.start_ms, s.end_ms, ch.label, text_of(s, form)});
      std::stable_sort(lines.begin(), lines.end(), [](const cue& a, const cue& b) { return a.start_ms < b.start_ms; });
      for (const auto& c : lines) out += cue_text(c) + "\n";
      return out;
    }
    case transcript_format::srt: {
      int n = 0;
      for (const auto& c : make_cues(t, form))
        out += std::to_string(++n) + "\n" + clock(c.start_ms, ',') + " --> " + clock(c.end_ms, ',') + "\n" + cue_text(c) + "\n\n";
      return out;
    }
    case transcript_format::vtt: {
      out = "WEBVTT\n\n";
      for (const auto& c : make_cues(t, form))
        out += clock(c.start_ms, '.') + " --> " + clock(c.end_ms, '.') + "\n" +
               (c.label.empty() ? c.text : "<v " + c.label + ">" + c.text) + "\n\n";
      return out;
    }
  }
  return out;
}

}  // namespace sluice::cli
