#pragma once
/// Redaction of sensitive data in written tokens (after ITN): card numbers (13-19 digits that
/// pass the Luhn check, or any number after a card context word), expiry dates, CVV codes and
/// account numbers after their context words, social security numbers (9 digits after
/// "social security"/"ssn"), e-mail addresses, and a tenant's own words and phrases.
/// Context words and digit counts are data: the [redact_*] tables and [settings] of the grammar.
///
/// The result says which tokens to mask and the time spans they cover (start_ms/end_ms of the
/// spoken words, merged when adjacent tokens of one kind are masked), so a recorder can bleep
/// the audio. Partials also mask a number still being read at their end (it may be the start of
/// a card number whose Luhn sum is not known yet).
///
/// Across utterances (redaction_carry): a stream's finals are redacted one after the other, and
/// what an earlier final opened (a context word, a masked number, a digit run still being read)
/// carries into the next ones for a bounded number of finals and stream time, so a card number
/// read over several utterances is masked in each piece. What is already out cannot be taken
/// back, so a final that ends in a digit run read one by one of partial_digits_min digits or more
/// is masked at once too (it may be the first group of a card continued in the next utterance).
/// What can still leak is listed in redaction.cpp (carried_context).

#include <cstdint>
#include <string>
#include <vector>

#include "moe/postproc/grammar.hpp"
#include "moe/postproc/itn.hpp"

namespace sluice::moe::postproc {

enum class redaction_kind { card, expiry, cvv, ssn, account, email, word, unfinished_number };

/// "card", "expiry", ... (JSON `kind`).
const char* to_string(redaction_kind k);
/// What replaces masked words in every output: "[card]", "[expiry]", ...
std::string mask_text(redaction_kind k);

/// What one tenant (or the engine default) wants redacted.
struct redaction_rules {
  bool enabled = true;  ///< false: nothing is masked (the other fields are ignored)
  bool cards = true;
  bool expiry = true;
  bool cvv = true;
  bool ssn = true;
  bool accounts = true;
  bool emails = true;
  /// Words or phrases (lower-case, spoken form) masked wherever they are said.
  std::vector<std::string> words;
};

/// How far a stream's redaction context carries into its next finals ([postproc]
/// redact_carry_finals, redact_carry_ms).
struct carry_limits {
  int finals = 2;             ///< finals (with words) an opened context covers; 0: no carrying
  int64_t window_ms = 15000;  ///< stream time after what opened it that the context covers
};

/// What one stream's redaction remembers from its earlier finals. Owned by the stream (one per
/// audio channel, never shared); redactor::find reads it for every result and a final updates it.
/// Times are stream ms, as the words'.
struct redaction_carry {
  /// An open sensitive-number context: numbers in the next finals are masked as `kind`.
  bool open = false;
  redaction_kind kind = redaction_kind::card;
  bool number_seen = false;  ///< a number was masked in this context: any digits count from now
  int finals_left = 0;       ///< finals (with words) it still covers
  int64_t until_ms = 0;      ///< words starting after this are not covered
  /// The digit run that ended the last final (a number that may go on in the next one).
  int trailing_digits = 0;   ///< its digits (0: the last final did not end in a number)
  bool trailing_masked = false;
  redaction_kind trailing_kind = redaction_kind::unfinished_number;
  int64_t trailing_end_ms = 0;
};

struct redacted_span {
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  redaction_kind kind = redaction_kind::card;
  int first_token = 0;  ///< first masked written token
  int tokens = 1;       ///< how many (adjacent) written tokens
};

class redactor {
 public:
  /// Keeps a reference: `g` must outlive the redactor.
  explicit redactor(const itn_grammar& g) : g_(g) {}
  /// The spans to mask in `tokens`, in order, not overlapping. `is_final` false (a partial):
  /// a number of at least partial_digits_min digits at the end is masked too.
  std::vector<redacted_span> find(const std::vector<written_token>& tokens, const redaction_rules& rules,
                                  bool is_final) const;
  /// The same, with the stream's carried context `carry` (see redaction_carry) and its limits: a
  /// final (`is_final`) also updates `carry` for the next result; a partial only reads it.
  std::vector<redacted_span> find(const std::vector<written_token>& tokens, const redaction_rules& rules,
                                  bool is_final, redaction_carry& carry, const carry_limits& limits) const;

 private:
  const itn_grammar& g_;
};

/// Luhn check of a digit string (true for a valid card number checksum).
bool luhn_valid(const std::string& digits);

}  // namespace sluice::moe::postproc
