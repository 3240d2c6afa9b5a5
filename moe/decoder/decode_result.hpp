#pragma once
/// What every CTC decoder returns, for partial and final results alike, and how it is built from a
/// token alignment (the best path of the chosen label sequence).
///
/// Times are milliseconds from the start of the stream (the decoder's absolute frame offset plus
/// the frame inside the utterance, times frame_ms). A word spans its CTC spikes: it starts at the
/// first frame of its first token and ends at the end of the last frame of its last token, so
/// end_ms = (last_frame + 1) * frame_ms and a one-frame word is frame_ms long.
///
/// Confidence (in [0, 1]): each token's posterior is the highest softmax probability it has on the
/// frames the best path spends on it (its spike); a word's confidence is the lowest of its tokens'
/// posteriors, so one doubtful letter makes the whole word doubtful.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "moe/tokens.hpp"

namespace sluice::moe {

struct word_info {
  std::string word;
  int64_t start_ms = 0;  ///< start of the first frame of the word's first token
  int64_t end_ms = 0;    ///< end of the last frame of the word's last token
  float confidence = 0;  ///< min over the word's tokens of their peak posterior, in [0, 1]
  bool operator==(const word_info&) const = default;
};

/// One reading of an utterance among the n best a decoder kept (decoder.alternatives).
struct decode_alternative {
  std::string text;
  std::vector<word_info> words;
  double score = 0;       ///< the reading's log score (ln), as decode_result::score
  /// Its share of the probability of every reading that could end the utterance in the beam
  /// (exp(s x score) over the sum of their exp(s x score), s = decoder.alternatives_scale), in
  /// [0, 1]; readings of the same text count together. 1 for a decoder that keeps one reading
  /// (greedy).
  float confidence = 0;
  bool operator==(const decode_alternative&) const = default;
};

struct decode_result {
  std::string text;               ///< the words joined by single spaces
  std::vector<word_info> words;
  std::vector<int32_t> tokens;    ///< the CTC label sequence (blanks and repeats removed), <space> included
  double score = 0;               ///< the hypothesis' log score (ln): acoustic + hotword + LM terms
  /// Final results with decoder.alternatives > 0: up to that many distinct readings, best first
  /// (the first is this result itself). Empty otherwise, and in partial results.
  std::vector<decode_alternative> alternatives;
};

/// A hypothesis that can end the utterance: where the decoder keeps it, and its final score
/// (-inf: it cannot end there, and n_best leaves it out).
struct final_candidate {
  std::size_t index = 0;
  double score = 0;
};

/// The hypotheses 0 .. n - 1 that can end the utterance, best first: those whose `score(i)` is
/// above -inf (a NaN is not), equal scores in index order (of equal bests the first kept wins);
/// when none can, {0, fallback} alone. For n >= 1.
std::vector<final_candidate> rank_finals(std::size_t n, const std::function<double(std::size_t)>& score,
                                         double fallback);

/// The n-best list of a final: `ranked` best first (every hypothesis that can end the utterance),
/// `best` the result already made of ranked[0]. `text_of(index)` gives a
/// hypothesis' text (cheap: no alignment), `result_of(index, score)` its whole result, asked only
/// for the texts listed. Lists the first `n` distinct texts of the ranking; every ranked reading
/// of a listed text adds its weight, exp(scale x score), to that text's, and confidences are
/// shares of the weight of the whole ranking (scale in (0, 1]: decoder.alternatives_scale). Empty when n <= 0 or `ranked` is empty; `best` alone (confidence
/// 1) when ranked[0]'s score is not finite.
std::vector<decode_alternative> n_best(std::span<const final_candidate> ranked, int n, double scale,
                                       const decode_result& best,
                                       const std::function<std::string(std::size_t)>& text_of,
                                       const std::function<decode_result(std::size_t, double)>& result_of);

/// One token of an alignment; frames count from the start of the utterance.
struct aligned_token {
  int32_t token = 0;
  int32_t first_frame = 0;  ///< first frame the path spends on this token
  int32_t last_frame = 0;   ///< last frame the path spends on this token (inclusive)
  float posterior = 0;      ///< peak softmax probability of the token over those frames
  bool operator==(const aligned_token&) const = default;
};

/// Timing of frames: where the utterance starts in the stream and how long one frame is.
struct frame_timing {
  int64_t frame_offset = 0;  ///< absolute frame index of the utterance's first frame
  double frame_ms = 0;       ///< ms per decoder frame (40 for 4x subsampling of 10 ms fbank)
};

/// Splits an alignment into words at <space> tokens and before word-start pieces (with neither the
/// whole output is one word), attaches times and confidences and joins the text. `score` is copied into the result.
decode_result make_result(std::span<const aligned_token> alignment, const token_table& tokens,
                          const frame_timing& timing, double score);

/// As above, and a word also ends after every token i with ends_word[i] (the lexicon decoder's
/// boundaries, which the model need not have marked with <space>). ends_word.size() equals
/// alignment.size().
decode_result make_result(std::span<const aligned_token> alignment, const token_table& tokens,
                          const frame_timing& timing, double score, std::span<const bool> ends_word);

}  // namespace sluice::moe
