#pragma once
/// Lexicon-constrained streaming CTC prefix beam search: hypotheses spell words of a vocabulary
/// (word_lexicon.hpp) one character token at a time, and word boundaries come from the vocabulary,
/// not from the model: a word may end and the next begin with no <space> in between.
///
/// A hypothesis is a sequence of labels, each a token plus how it was read:
///  - a letter inside a vocabulary word being spelled (the word's letters so far are a prefix of
///    some vocabulary word);
///  - a letter that completes a vocabulary word: the word is closed there. Its score:
///      lexicon_lm_weight * ln P(word | previous words) + lexicon_word_bonus,
///    and the next letter starts a new word. A letter that completes "thank" may be read both
///    ways, so "thank" + "you" and "thankyou" (when listed) compete as two hypotheses;
///  - a letter of an out-of-vocabulary (OOV) word, spelled freely: only at a word start may a
///    hypothesis enter this path, paying oov_penalty at once and oov_letter_penalty per letter
///    (without it one long OOV word would be the cheapest reading of any stretch of audio). Like a vocabulary word's, any OOV
///    letter may also be read as the word's last: the OOV word is closed there and scores as the
///    LM's unknown word plus the word bonus, unless it spells a vocabulary word (that reading
///    exists already, without the penalty). So an OOV word ends where the search finds the next
///    word starting or the model's <space>, not only at a <space> (the model often omits them), and
///    an unknown name comes out when the model spells it clearly enough to pay the penalty;
///  - a <space> is not a label: between words (after a completed word, or at the start) it is read
///    as a blank, adding its acoustic probability to the hypothesis it follows, so the model's
///    <space> is evidence for a boundary but never required, and one word sequence is one
///    hypothesis whether or not (or how often) the model marked its boundaries. A word in progress
///    cannot take a <space>. (Until session 29 a <space> was a label of its own: "of today" with
///    and without the <space>s were separate hypotheses holding beam slots for the same words.)
/// With a word-piece vocabulary (tokens.hpp) the labels are pieces and the vocabulary spells each
/// word as its tokenizer does; a word-start piece may only begin a word and any other piece only
/// continue one, so the model's word marks are boundaries and there is no <space>. Limits there:
/// a vocabulary word is recognised only in its tokenizer's split (another split of the same
/// letters is read as an OOV word), and a hotword is matched as a prefix of a word (no <space>
/// marks its end), so "carl" also biases "carlos".
/// While a word is being spelled its score also holds a provisional look-ahead,
/// lexicon_lm_weight * (best unigram ln probability of a vocabulary word it may become), replaced
/// by the true LM term when the word is completed. Hotwords (context_graph.hpp) are walked letter
/// by letter with a <space> stepped at every word end, so they match whole words; their words join
/// the vocabulary through the per-request lexicon of the lexicon_view.
///
/// Recombination: of a frame's candidates with the same future (the same LM state, place, word
/// being spelled, hotword state and last token), only the best by total score is kept, as token-
/// passing decoders do: they differ only in words the LM no longer sees, so the others could not
/// overtake it (up to how each splits its score between blank and token ends) and would only
/// hold beam slots. The text is the kept one's.
/// CTC merging, pruning (lexicon_beam_size, beam_log_threshold; per-frame token pruning as in
/// decoder_options), partial and final results, word times and confidences are as in
/// beam_search_decoder.hpp. At finalize(), a hypothesis in the middle of a word is not a result
/// (unless no other hypothesis is left; its closed reading is), unfinished hotwords are taken back and, with lm_end_of_sentence, ln P(</s> | history) is added.
///
/// One decoder per stream, not thread-safe. The token_table, the lexicons and the LM must outlive
/// the decoder; the hotword graph is owned. Memory grows with the utterance: the pruned frames and
/// <= lexicon_beam_size label-trie nodes per frame (memory_bytes() reports it).

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
#include "moe/decoder/word_lexicon.hpp"
#include "moe/tokens.hpp"

namespace sluice::moe {

class lexicon_decoder {
 public:
  /// `lm` may be null (then words score only their bonus). errc::invalid_config when `opts` fails
  /// validate().
  static result<lexicon_decoder> create(const token_table& tokens, const decoder_options& opts, lexicon_view lexicon,
                                        const arpa_lm* lm = nullptr, context_graph hotwords = {});

  /// Consumes `n_frames` frames of logits (f32 [n_frames, tokens.size()]). errc::invalid_argument
  /// on a size mismatch or a non-finite value (then nothing of this chunk is consumed).
  result<void> accept(std::span<const float> logits, int32_t n_frames);

  /// The best hypothesis so far by its running score (a word in progress shows its letters).
  /// Const, yet it updates the alignment rows it reuses (aligner_): one caller at a time.
  decode_result partial() const;

  /// The best hypothesis once the utterance's end is scored; then starts the next utterance.
  decode_result finalize();

  int64_t frame_offset() const { return frame_offset_; }
  /// Only between utterances (after create() or finalize()).
  void set_frame_offset(int64_t frame) { frame_offset_ = frame; }
  int32_t frames() const { return frames_.size(); }
  int32_t hypotheses() const { return static_cast<int32_t>(beams_.size()); }
  /// Heap bytes this stream's decoder holds now (frames, label trie, hypotheses, scratch).
  std::size_t memory_bytes() const;

  /// Whether extensions that cannot be kept are skipped (see start_floor() in the .cpp); on
  /// by default. Off gives the same results, more slowly: for tests and comparisons.
  void set_skip_hopeless(bool on) { skip_hopeless_ = on; }
  /// Extensions skipped so far (not reset by finalize()).
  int64_t skipped_extensions() const { return skipped_; }
  /// Questions sent to the word LM so far, memo misses only (not reset by finalize()).
  int64_t lm_questions() const { return lm_questions_; }
  /// Frames the alignment of results computed so far (not reset by finalize()): the partials
  /// reuse the rows of the frames before (ctc_aligner).
  int64_t aligned_rows() const { return aligner_.rows_computed(); }
  /// The kept hypotheses, best first: each one's labels (token + vocab * how it was read) and
  /// total score. For tests that compare two searches frame by frame.
  std::vector<std::pair<std::vector<int32_t>, double>> kept() const;

 private:
  /// How a label was read (see above); a label is token + vocab * kind.
  enum class kind : int32_t { letter = 0, word_end = 1, oov_letter = 2, oov_end = 3 };
  enum class place : uint8_t { boundary, in_word, in_oov };

  struct hypothesis {
    int32_t parent = -1;  ///< trie node of the labels minus the last (-1: this is the root)
    int32_t label = -1;   ///< last label (token + vocab * kind); -1: none
    int32_t token = -1;   ///< last label's token (what CTC repeats compare)
    int32_t node = -1;    ///< trie node of the labels; -1 until it survives pruning
    double log_blank;
    double log_token;
    /// acoustic(), kept up to date wherever log_blank or log_token change (each is a log-add,
    /// the largest part of a hypothesis' cost per frame): a kept hypothesis' from the frame
    /// that made it, a new extension's its one term.
    double ac = 0;
    double bonus = 0;      ///< settled terms: LM and bonus of closed words, OOV penalties, hotwords
    double lookahead = 0;  ///< provisional LM look-ahead of the word being spelled
    context_state context;
    int32_t lm_state = 0;
    lexicon_cursor lex;    ///< the word being spelled (root at a boundary; dead for an OOV word off the trie)
    place where = place::boundary;
    uint64_t future = 0;   ///< future_key(*this), once its LM state is known
    double acoustic() const;
    double total() const { return ac + bonus + lookahead; }  ///< acoustic() + bonus + lookahead
  };

  lexicon_decoder(const token_table& tokens, const decoder_options& opts, lexicon_view lexicon, const arpa_lm* lm,
                  context_graph hotwords);
  void start_utterance();
  void advance(std::span<const token_log_prob> frame);
  /// Where a frame's token takes h: into h's own slot as a blank (blank, or <space> between
  /// words), nowhere (<space> inside a word), into h's own slot and a new one (h's last token
  /// again: its repeat, and a second letter after a blank), or into a new slot.
  enum class route { as_blank, none, repeat, extend };
  route route_of(int32_t token, const hypothesis& h) const;
  /// Starts this frame's floor (floor_ = -inf, none counted; see the .cpp) and marks the parents
  /// of kept hypotheses (is_parent_, child_token_); tracking_ is false when skipping is off.
  void start_floor();
  /// The most any reading of an extension of h adds to h's settled terms (see the .cpp).
  double reach(const hypothesis& h) const;
  /// Counts a candidate of future `key` whose total ends the frame >= `bound` towards the
  /// floor, unless that future counts already (see the .cpp).
  void count_future(uint64_t key, double bound);
  /// Adds `p` to the ln probability of every reading of h + token (through its token or blank end).
  /// `guarded`: h is a parent of a kept hypothesis whose last token is `token` (or skipping is
  /// off), so a reading's slot may be that one's own continuation: then `p` adds to it.
  void extend(const hypothesis& h, int32_t token, double p, bool guarded);
  /// A hash of what same_future() compares (recombination and the floor key candidates by it).
  static uint64_t future_key(const hypothesis& h);
  std::size_t same(const hypothesis& h);
  /// Each candidate's total into scores_; of the frame's candidates that score alike from here on
  /// (same_future), only the best keeps its total, the others get -inf, so pruning drops them.
  void recombine();
  static bool same_future(const hypothesis& a, const hypothesis& b);
  /// Adds the score terms of closing a word (LM, word -1: unknown, and word bonus) to `bonus` and
  /// advances lm_state when the memo knows the LM's answer (true); else queues the LM question
  /// for score_lm_words() and changes neither (false).
  bool close_word(int32_t lm_word, int32_t& lm_state, double& bonus);
  /// Answers the frame's queued LM questions together (arpa_lm::score_all) and completes the
  /// hypotheses that wait for them.
  void score_lm_words();
  static uint64_t lm_key(int32_t lm_state, int32_t lm_word) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(lm_state)) << 32) | static_cast<uint32_t>(lm_word + 1);
  }
  /// The score change of ending the utterance in `h` (-inf when it cannot end there).
  double end_bonus(const hypothesis& h) const;
  /// h's result; untimed (`timed` false): the words without the alignment (times and
  /// confidences 0), for its text alone.
  decode_result result_of(const hypothesis& h, double score, bool timed = true) const;

  const token_table* tokens_;
  decoder_options opts_;
  lexicon_view lexicon_;
  const arpa_lm* lm_;
  context_graph hotwords_;
  int32_t vocab_;

  prefix_trie trie_;
  frame_store frames_;
  /// Aligns partial and final results; it keeps the utterance's Viterbi rows between partials
  /// (result_of is const: the rows are a cache of frames_ and the labels last asked for).
  mutable ctc_aligner aligner_;
  std::vector<hypothesis> beams_;  ///< survivors of the last frame, best first
  int64_t frame_offset_ = 0;

  // Per-frame scratch, kept to reuse its memory.
  std::vector<hypothesis> next_;
  flat_u64_map<uint32_t> slot_;
  flat_u64_map<uint32_t> future_;  ///< recombine(): a state's best candidate so far
  std::vector<std::size_t> order_;
  std::vector<double> scores_;
  ranked_candidates ranked_;
  std::vector<float> row_;
  std::vector<token_log_prob> candidates_;
  std::vector<float> token_lp_;  ///< advance(): the frame's tokens within reach by id, -inf between frames
  flat_u64_map<lm_step> lm_cache_;  ///< (history, word + 1) -> LM step
  /// A frame's word ends whose LM term is not in the memo: next_[index] waits for the answer
  /// to lm_queries_ at the same position; bonus is its bonus before the word, hotword_delta
  /// what the word end's <space> added through the hotword graph.
  struct pending_word {
    uint32_t index;
    double bonus;
    double hotword_delta;
  };
  std::vector<pending_word> pending_lm_;
  std::vector<arpa_lm::query> lm_queries_;
  std::vector<uint32_t> lm_scratch_;
  double root_lookahead_ = 0;        ///< the weighted look-ahead of the vocabulary's root
  bool skip_hopeless_ = true;
  bool tracking_ = false;            ///< this frame has a floor (skipping on, no hotwords, LM weight >= 0)
  double floor_ = 0;                 ///< this frame's floor so far (-inf: none yet)
  int64_t skipped_ = 0;
  int64_t lm_questions_ = 0;
  flat_u64_map<uint8_t> is_parent_;    ///< nodes with a kept child
  flat_u64_map<uint8_t> child_token_;  ///< (node, token): the node has a kept child ending in token
  flat_u64_map<uint8_t> counted_;    ///< future keys that count towards the floor

  std::vector<double> floor_heap_;   ///< the lexicon_beam_size best counted lower bounds, a min-heap
};

}  // namespace sluice::moe
