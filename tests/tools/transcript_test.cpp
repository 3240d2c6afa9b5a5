// Subtitles from a transcript (tools/sluice/transcript.cpp): cues cut at sentence ends and at the
// longest cue, times taken from the display words, and SRT/WebVTT text checked line by line
// against the formats' rules (no independent parser is installed here: no ffmpeg, no python
// srt/webvtt modules).

#include <doctest/doctest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tools/sluice/transcript.hpp"

using namespace sluice;

namespace {

struct parsed_cue {
  int64_t start_ms = 0, end_ms = 0;
  std::string text;
};

int64_t ms_of(const std::smatch& m, int first) {
  return ((std::stoll(m[first]) * 60 + std::stoll(m[first + 1])) * 60 + std::stoll(m[first + 2])) * 1000 +
         std::stoll(m[first + 3]);
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// SRT: blocks of "index\nHH:MM:SS,mmm --> HH:MM:SS,mmm\ntext\n" separated by one blank line,
// indices 1, 2, 3, ...
std::vector<parsed_cue> parse_srt(const std::string& s) {
  static const std::regex time_line(R"(^(\d{2}):(\d{2}):(\d{2}),(\d{3}) --> (\d{2}):(\d{2}):(\d{2}),(\d{3})$)");
  std::vector<parsed_cue> out;
  const auto l = lines_of(s);
  std::size_t i = 0;
  while (i < l.size()) {
    REQUIRE(l[i] == std::to_string(out.size() + 1));
    REQUIRE(i + 2 < l.size());
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_match(l[i + 1], m, time_line), l[i + 1]);
    parsed_cue c{ms_of(m, 1), ms_of(m, 5), l[i + 2]};
    REQUIRE(!c.text.empty());
    out.push_back(c);
    i += 3;
    REQUIRE(i < l.size());
    REQUIRE(l[i].empty());
    ++i;
  }
  return out;
}

// WebVTT: "WEBVTT", a blank line, then cues "HH:MM:SS.mmm --> HH:MM:SS.mmm\ntext\n" + blank line.
std::vector<parsed_cue> parse_vtt(const std::string& s) {
  static const std::regex time_line(R"(^(\d{2}):(\d{2}):(\d{2})\.(\d{3}) --> (\d{2}):(\d{2}):(\d{2})\.(\d{3})$)");
  const auto l = lines_of(s);
  REQUIRE(l.size() >= 2);
  REQUIRE(l[0] == "WEBVTT");
  REQUIRE(l[1].empty());
  std::vector<parsed_cue> out;
  for (std::size_t i = 2; i < l.size(); i += 3) {
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_match(l[i], m, time_line), l[i]);
    REQUIRE(i + 2 < l.size());
    out.push_back({ms_of(m, 1), ms_of(m, 5), l[i + 1]});
    REQUIRE(!out.back().text.empty());
    REQUIRE(l[i + 2].empty());
  }
  return out;
}

// A mono transcript of one segment whose display words are `words`, word k at [k*500, k*500+400)
// ms after `offset_ms`.
cli::file_transcript transcript_of(const std::vector<std::string>& words, int64_t offset_ms = 61000) {
  cli::transcript_segment seg;
  for (std::size_t k = 0; k < words.size(); ++k) {
    const auto start = offset_ms + static_cast<int64_t>(k) * 500;
    seg.display_words.push_back({words[k], start, start + 400, 0.9f});
    seg.words.push_back({words[k], start, start + 400, 0.9f});
    seg.display_text += (k ? " " : "") + words[k];
  }
  seg.text = seg.display_text;
  seg.start_ms = offset_ms;
  seg.end_ms = seg.display_words.back().end_ms;
  cli::file_transcript t;
  t.channels.push_back({0, "", {seg}});
  return t;
}

}  // namespace

TEST_CASE("subtitles: one cue per sentence, times from the first and last word of each") {
  const std::vector<std::string> words = {"Hello,", "my", "name", "is", "Anna.", "I", "am", "calling", "about",
                                          "my", "bill.", "Can", "you", "help?"};
  const auto t = transcript_of(words);
  const auto& w = t.channels[0].segments[0].display_words;
  for (const auto fmt : {cli::transcript_format::srt, cli::transcript_format::vtt}) {
    const auto out = cli::render(t, fmt);
    CAPTURE(out);
    const auto cues = fmt == cli::transcript_format::srt ? parse_srt(out) : parse_vtt(out);
    REQUIRE(cues.size() == 3);
    CHECK(cues[0].text == "Hello, my name is Anna.");
    CHECK(cues[1].text == "I am calling about my bill.");
    CHECK(cues[2].text == "Can you help?");
    // Sentence k spans words [first, last]: 0-4, 5-10, 11-13.
    const std::size_t first[] = {0, 5, 11}, last[] = {4, 10, 13};
    for (std::size_t k = 0; k < 3; ++k) {
      CHECK(cues[k].start_ms == w[first[k]].start_ms);
      CHECK(cues[k].end_ms == w[last[k]].end_ms);
      CHECK(cues[k].end_ms > cues[k].start_ms);
      if (k > 0) CHECK(cues[k].start_ms >= cues[k - 1].end_ms);
    }
  }
  // 61 s in: the clock writes minutes (00:01:01,000), not 61 seconds.
  CHECK(cli::render(t, cli::transcript_format::srt).find("00:01:01,000 --> 00:01:03,400") != std::string::npos);
}

TEST_CASE("subtitles: a sentence longer than 7 s is cut into cues of at most 7 s, in time order") {
  // 30 words, 15 s, no mark until the last word.
  std::vector<std::string> words(30, "word");
  words.back() = "end.";
  const auto cues = parse_vtt(cli::render(transcript_of(words, 0), cli::transcript_format::vtt));
  REQUIRE(cues.size() >= 3);
  int64_t prev_end = 0;
  std::size_t n_words = 0;
  for (const auto& c : cues) {
    CHECK(c.end_ms - c.start_ms <= 7000);
    CHECK(c.start_ms >= prev_end);
    CHECK(c.start_ms % 500 == 0);    // starts on a word's start
    CHECK(c.end_ms % 500 == 400);    // ends on a word's end
    prev_end = c.end_ms;
    std::istringstream in(c.text);
    for (std::string x; in >> x;) ++n_words;
  }
  CHECK(n_words == 30);  // every word once
  CHECK(cues.back().text.substr(cues.back().text.size() - 4) == "end.");
}

TEST_CASE("subtitles: the lexical form (no marks) is cut only by the cue limits") {
  const std::vector<std::string> words = {"hello", "my", "name", "is", "anna"};
  auto t = transcript_of(words);
  const auto cues = parse_srt(cli::render(t, cli::transcript_format::srt, cli::transcript_form::lexical));
  REQUIRE(cues.size() == 1);
  CHECK(cues[0].text == "hello my name is anna");
}
