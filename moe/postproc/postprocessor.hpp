#pragma once
/// From the decoder's words to the two forms of a result:
///   lexical: the words as spoken (lower-case), with sensitive data masked when redaction is on;
///   display: ITN (numbers, dates, e-mail written), redacted, punctuated and cased.
/// plus the redacted time spans. One postprocessor serves every stream: it is immutable after
/// construction and run() may be called from any thread at once (the punctuation hook must be
/// thread-safe too, which punctuation_hook requires).
///
/// Masking decision: when redaction is on, masked words are replaced by their mask ("[card]")
/// in the lexical form and its word list as well as in the display form: a card's digits must not
/// leave the engine in any output, stored call or log, and the lexical form goes to all of them.

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "moe/postproc/grammar.hpp"
#include "moe/postproc/itn.hpp"
#include "moe/postproc/punctuation.hpp"
#include "moe/postproc/redaction.hpp"

namespace sluice::moe::postproc {

struct output_word {
  std::string text;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  float confidence = 1;
};

struct postprocessed {
  std::string display_text;
  std::vector<output_word> display_words;
  std::string lexical_text;  ///< masked where redacted
  std::vector<output_word> lexical_words;
  std::vector<redacted_span> redactions;  ///< first_token/tokens index the written tokens (not kept)
};

/// What a stream asks of post-processing.
struct postproc_options {
  bool itn = true;          ///< false: the display form keeps spoken words (still cased, redacted)
  bool punctuate = true;    ///< false: no capitals or marks in the display form
  redaction_rules redact;   ///< the stream's tenant's rules (enabled = false: nothing masked)
  carry_limits carry;       ///< how far a redaction context carries into the next finals
};

class postprocessor {
 public:
  /// `grammar` must not be null. `punct` null: rule_punctuation.
  explicit postprocessor(std::shared_ptr<const itn_grammar> grammar,
                         std::shared_ptr<const punctuation_hook> punct = nullptr);
  /// `carry`: the stream's redaction state from its earlier finals (redaction_carry), owned by
  /// the stream and used by one thread at a time; a final updates it, a partial only reads it.
  /// Null: the result is redacted alone.
  postprocessed run(std::span<const spoken_word> words, const postproc_options& opt, bool is_final,
                    redaction_carry* carry = nullptr) const;
  const itn_grammar& grammar() const { return *grammar_; }

 private:
  std::shared_ptr<const itn_grammar> grammar_;
  std::shared_ptr<const punctuation_hook> punct_;
};

/// The grammar shipped in the repository (moe/postproc/data/en_itn.grammar), compiled in so every
/// binary has it wherever it runs; `postproc.itn_grammar` may name a file to use instead.
std::string_view builtin_itn_grammar();

}  // namespace sluice::moe::postproc
