#pragma once
/// Streaming CTC prefix beam search with hotword biasing and word-LM shallow fusion.
///
/// Every hypothesis is a label prefix with two ln probabilities summed over all of its CTC paths
/// so far: ending in a blank and ending in its last token. A frame extends each hypothesis by the
/// frame's candidate tokens (see decoder_options: top max_tokens_per_frame tokens above
/// token_min_log_prob); equal prefixes merge; the best beam_size by score survive (those more than
/// beam_log_threshold below the best are dropped; ties go to the prefix created first). The score
/// is ln P(prefix) plus terms that depend on the prefix alone, added the moment a token is added:
///  - hotwords (context_graph.hpp): bonus per token on a hotword path, taken back on a break-off;
///  - word LM (arpa_lm.hpp): when <space> (characters) or the next word-start piece (word pieces)
///    closes a non-empty word,
///      lm_weight * ln P(word | previous words) + word_insertion_bonus;
///    the history starts at <s>. At finalize() the last word is closed the same way and, with
///    lm_end_of_sentence, lm_weight * ln P(</s> | history) is added; an unfinished hotword's
///    bonus is taken back.
/// Partial results rank by the running score (a hotword being spoken already counts; the word in
/// progress has no LM term yet). Timestamps and confidences come from the best path of the chosen
/// labels through the stored pruned frames (ctc_alignment.hpp, decode_result.hpp).
///
/// One decoder per stream: accept() logits chunk by chunk (f32 [n_frames, vocab], row-major);
/// partial() any time; finalize() at an endpoint returns the final result and starts the next
/// utterance at the following frame, keeping times absolute. Results do not depend on how frames
/// are split into chunks. Memory grows with the utterance: the pruned frames (<= max_tokens_per_frame
/// entries each) and <= beam_size trie nodes per frame. Not thread-safe. The token_table and the
/// LM must outlive the decoder; the hotword graph is owned (built per request).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "moe/decoder/arpa_lm.hpp"
#include "moe/decoder/beam_prune.hpp"
#include "moe/decoder/context_graph.hpp"
#include "moe/decoder/ctc_alignment.hpp"
#include "moe/decoder/ctc_frames.hpp"
#include "moe/decoder/decode_result.hpp"
#include "moe/decoder/decoder_options.hpp"
#include "moe/decoder/flat_map.hpp"
#include "moe/decoder/prefix_trie.hpp"
#include "moe/tokens.hpp"

namespace sluice::moe {

class beam_search_decoder {
 public:
  /// `lm` may be null (no LM). errc::invalid_config when `opts` fails validate().
  static result<beam_search_decoder> create(const token_table& tokens, const decoder_options& opts,
                                            const arpa_lm* lm = nullptr, context_graph hotwords = {});

  /// Consumes `n_frames` frames of logits (f32 [n_frames, tokens.size()]). errc::invalid_argument
  /// on a size mismatch or a non-finite value (then nothing of this chunk is consumed).
  result<void> accept(std::span<const float> logits, int32_t n_frames);

  /// The best hypothesis so far, by its running score.
  /// Const, yet it updates the alignment rows it reuses (aligner_): one caller at a time.
  decode_result partial() const;

  /// The best hypothesis once the utterance's end is scored; then starts the next utterance.
  decode_result finalize();

  /// Absolute index of the current utterance's first frame (from the stream's start).
  int64_t frame_offset() const { return frame_offset_; }
  /// For callers that skip audio between utterances: the next utterance starts at `frame`.
  /// Only between utterances (after create() or finalize()).
  void set_frame_offset(int64_t frame) { frame_offset_ = frame; }
  /// Frames accepted in the current utterance.
  int32_t frames() const { return frames_.size(); }
  /// Hypotheses alive now (<= beam_size).
  int32_t hypotheses() const { return static_cast<int32_t>(beams_.size()); }

 private:
  struct hypothesis {
    int32_t parent = -1;  ///< trie node of the prefix minus its last token (-1: this is the root)
    int32_t token = -1;   ///< last token of the prefix (-1: empty prefix)
    int32_t node = -1;    ///< trie node of the prefix; -1 until it survives pruning
    double log_blank;     ///< ln P(prefix, path so far ends in blank)
    double log_token;     ///< ln P(prefix, path so far ends in its last token)
    double bonus = 0;     ///< hotword and LM terms of the prefix
    context_state context;
    int32_t lm_state = 0;
    double acoustic() const;
    double total() const { return acoustic() + bonus; }
  };

  beam_search_decoder(const token_table& tokens, const decoder_options& opts, const arpa_lm* lm,
                      context_graph hotwords);
  void start_utterance();
  void advance(std::span<const token_log_prob> frame);
  std::size_t same(const hypothesis& h);
  std::size_t extended(const hypothesis& h, int32_t token);
  void prune();
  /// Score of the word that `h` ends with (LM term), advancing `lm_state`; 0 with no LM or word.
  double close_word(int32_t node, int32_t& lm_state) const;
  double end_bonus(const hypothesis& h) const;
  /// h's result; untimed (`timed` false): the words without the alignment, for its text alone.
  decode_result result_of(const hypothesis& h, double score, bool timed = true) const;

  const token_table* tokens_;
  decoder_options opts_;
  const arpa_lm* lm_;
  context_graph hotwords_;

  prefix_trie trie_;
  frame_store frames_;
  /// Aligns partial and final results; it keeps the utterance's Viterbi rows between partials
  /// (result_of is const: the rows are a cache of frames_ and the labels last asked for).
  mutable ctc_aligner aligner_;
  std::vector<hypothesis> beams_;  ///< survivors of the last frame, best first
  int64_t frame_offset_ = 0;

  // Per-frame scratch, kept to reuse its memory.
  std::vector<hypothesis> next_;
  flat_u64_map<uint32_t> slot_;  ///< prefix key -> index in next_
  std::vector<std::size_t> order_;
  std::vector<double> scores_;
  ranked_candidates ranked_;
  std::vector<float> row_;
  std::vector<token_log_prob> candidates_;
  mutable std::string word_;
};

}  // namespace sluice::moe
