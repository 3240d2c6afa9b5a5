#pragma once
/// A file's transcript as `sluice transcribe` builds it, and its output formats.

#include <cstdint>
#include <string>
#include <vector>

#include "moe/decoder/decode_result.hpp"

namespace sluice::cli {

/// A masked stretch of audio (redaction), for a recorder to bleep.
struct redacted_stretch {
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  std::string kind;  ///< card, expiry, cvv, ssn, account, email, word
};

/// One alternative reading of a segment ([decoder] alternatives).
struct transcript_alternative {
  std::string text;                   ///< lexical
  std::string display_text;
  float confidence = 0;               ///< its share of the probability of the readings kept
  std::vector<moe::word_info> words;  ///< lexical, absolute in the file
};

/// One speech segment of one channel, with times absolute in the file, in both forms: lexical
/// (as spoken) and display (numbers written, punctuated, cased); masked data is masked in both.
struct transcript_segment {
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  std::string text;                   ///< lexical
  std::vector<moe::word_info> words;  ///< lexical; start_ms/end_ms absolute in the file
  std::string display_text;
  std::vector<moe::word_info> display_words;  ///< one per written token
  std::vector<redacted_stretch> redactions;
  std::vector<transcript_alternative> alternatives;  ///< best first; empty unless asked for
};

struct channel_transcript {
  int channel = 0;
  std::string label;  ///< "agent"/"customer" for stereo calls, else "channel N" ("" for mono)
  std::vector<transcript_segment> segments;
};

struct file_transcript {
  std::string path;
  double duration_s = 0;
  int input_sample_rate = 0;
  std::vector<channel_transcript> channels;
};

enum class transcript_format { text, json, srt, vtt };

/// Which form text, SRT and VTT print (JSON always carries both).
enum class transcript_form { display, lexical };

/// "text" | "json" | "srt" | "vtt"; false for anything else.
bool parse_transcript_format(const std::string& name, transcript_format& out);

/// Renders one file. SRT/VTT cues: one per sentence of a segment (cut after a word ending in '.'
/// or '?', moe::punct::split_sentences), a sentence longer than max_cue_ms (7 s) or max_cue_chars
/// (84) cut before the word that would pass it; a cue spans its first word's start_ms to its last
/// word's end_ms. Channel labels prefix cue text on multi-channel files.
/// Text, SRT and VTT print `form`; JSON segments hold both: text/words (lexical),
/// display_text/display_words, and redactions ({start_ms, end_ms, kind}).
std::string render(const file_transcript& t, transcript_format fmt,
                   transcript_form form = transcript_form::display);

}  // namespace sluice::cli
