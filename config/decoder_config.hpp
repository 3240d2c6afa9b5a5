#pragma once
/// [decoder]: the CTC decoders (greedy, prefix beam search, lexicon-constrained prefix beam
/// search) and word-LM fusion.
/// Log probabilities are natural logs (ln). moe::decoder_options is this struct.

#include <string>

#include "config/field.hpp"

namespace sluice::config {

struct decoder_config {
  /// The most alternative readings a final result may carry (decoder.alternatives, a client's ask).
  static constexpr int max_alternatives = 20;
  /// Which decoder turns the model's output into words: "greedy" (best path), "beam" (prefix beam
  /// search, word boundaries where the model emits <space>), "lexicon" (prefix beam search over
  /// the words of the LM, the lexicon file and the hotwords; boundaries from the vocabulary), or
  /// "auto": lexicon when the model directory has an LM or a lexicon is configured, else beam.
  std::string mode = "auto";
  /// Extra words for the lexicon decoder, one per line (anything after the first white space is
  /// ignored; '#' starts a comment). Relative paths are relative to the model directory. Empty:
  /// <model dir>/lexicon.txt when it exists, else none.
  std::string lexicon_file;
  /// Lexicon decoder: hypotheses kept after every frame (several segmentations of one spelling
  /// compete, so it wants more than beam_size). 28 since session 31, when the batched LM lookups
  /// brought its cost under the 25% target on that host (dev WER 41.2 / 28.2% at 24, 40.3 / 27.8%
  /// at 28, 40.1 / 27.5% at 32; decoder_bench 20.7-21.3%, 23.4-24.0%, 26.3-27.1% of the model's
  /// time); on the AVX-512 host of sessions 32-33, with a faster model, 28 costs 27.3-28.0%
  /// (session 33's decoder and bench; README).
  int lexicon_beam_size = 28;
  /// Lexicon decoder: weight of the word LM's ln probability.
  double lexicon_lm_weight = 0.8;
  /// Lexicon decoder: score added per word (> 0 favours more, shorter words; a positive bonus
  /// reads unclear audio as strings of one-letter words). -0.5 since session 30: best or within
  /// 0.3 points of the best of -1 .. 0.5 at LM weights 0.6 .. 1.2 on the two dev sets, scored
  /// without redaction (session 9 chose 0 on asterisk prompts, scored with it).
  double lexicon_word_bonus = -0.5;
  /// Lexicon decoder: score taken away for spelling a word outside the vocabulary letter by letter
  /// (it then also gets the LM's unknown-word probability). Larger: fewer, clearer unknown words.
  double oov_penalty = 8.0;
  /// Lexicon decoder: score taken away per letter of an out-of-vocabulary word (so one long OOV
  /// word is not a cheaper reading of a stretch of audio than the vocabulary words in it).
  double oov_letter_penalty = 1.5;
  /// Duration of one decoder frame (ms): the model's 4x subsampling of 10 ms fbank frames.
  double frame_ms = 40.0;
  /// Prefix beam search: hypotheses kept after every frame.
  int beam_size = 8;
  /// Per-frame token pruning: only the this-many most probable tokens of a frame extend or keep
  /// hypotheses (blank counts as a token).
  int max_tokens_per_frame = 8;
  /// Per-frame token pruning: tokens whose ln posterior is below this are skipped (the frame's
  /// best token is always kept). ln(1e-5) ~ -11.5.
  double token_min_log_prob = -11.5;
  /// Hypotheses whose score is more than this below the best one's are dropped (ln).
  double beam_log_threshold = 50.0;
  /// Weight of the word LM's ln probability in the beam score.
  double lm_weight = 0.5;
  /// Added to the beam score for every word the LM scores (counters the LM's bias to short output).
  double word_insertion_bonus = 0.0;
  /// At finalize(), also score the end of the sentence (</s>) with the LM.
  bool lm_end_of_sentence = true;
  /// Final results also carry up to this many alternative readings (n-best, best first, distinct
  /// texts), each with its share of the probability of the readings the search kept (0: none,
  /// the default). The beam and lexicon decoders keep several readings; the greedy one has one.
  /// Clients may ask for fewer or more per stream (Vosk's max_alternatives, /v1/stream's
  /// "alternatives"), up to max_alternatives.
  int alternatives = 0;
  /// Alternatives' confidences weigh each reading by exp(alternatives_scale x its score) (Kaldi's
  /// acoustic scale for lattice posteriors): at 1 the CTC model's peaky posteriors give the best
  /// reading nearly all the probability however often it is wrong; smaller values flatten the
  /// shares. The order of the readings does not depend on it. 0.05 chosen on the two dev sets
  /// (session 44, evaluate.py --oracle 20): the best reading's confidence against whether it is
  /// exactly right, Brier score dev / dev_unseen 0.564 / 0.530 at 1, 0.273 / 0.250 at 0.2,
  /// 0.215 / 0.204 at 0.1, 0.204 / 0.204 at 0.05, 0.205 / 0.213 at 0.02.
  double alternatives_scale = 0.05;

  template <class V>
  void visit(V&& v) {
    v("mode", mode, one_of{{"auto", "greedy", "beam", "lexicon"}}, "greedy, beam, lexicon, or auto");
    v("lexicon_file", lexicon_file, any_string{}, "extra words for the lexicon decoder (one per line)");
    v("lexicon_beam_size", lexicon_beam_size, range{1, 1024}, "lexicon decoder: hypotheses kept per frame");
    v("lexicon_lm_weight", lexicon_lm_weight, range{0, 100}, "lexicon decoder: weight of the LM's ln probability");
    v("lexicon_word_bonus", lexicon_word_bonus, range{-100, 100}, "lexicon decoder: score added per word");
    v("oov_penalty", oov_penalty, range{0, 1000}, "lexicon decoder: score taken away per out-of-vocabulary word");
    v("oov_letter_penalty", oov_letter_penalty, range{0, 100},
      "lexicon decoder: score taken away per letter of an out-of-vocabulary word");
    v("frame_ms", frame_ms, range{1, 1000}, "duration of one decoder frame (ms)");
    v("beam_size", beam_size, range{1, 1024}, "hypotheses kept per frame");
    v("max_tokens_per_frame", max_tokens_per_frame, range{1, 65536},
      "most probable tokens considered per frame");
    v("token_min_log_prob", token_min_log_prob, range{-1000, 0},
      "tokens below this ln posterior are skipped (the best one is always kept)");
    v("beam_log_threshold", beam_log_threshold, range{0, 1e6},
      "hypotheses this far (ln) below the best are dropped");
    v("lm_weight", lm_weight, range{0, 100}, "weight of the LM's ln probability");
    v("word_insertion_bonus", word_insertion_bonus, range{-100, 100},
      "score added per word the LM scores");
    v("lm_end_of_sentence", lm_end_of_sentence, any_bool{},
      "score </s> with the LM at the end of an utterance");
    v("alternatives", alternatives, range{0, max_alternatives},
      "alternative readings (n-best) in final results");
    v("alternatives_scale", alternatives_scale, range{0.001, 1},
      "weight of a reading's score in its alternatives confidence");
  }
  std::string check() const { return {}; }
};

}  // namespace sluice::config
