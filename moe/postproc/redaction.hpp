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

 private:
  const itn_grammar& g_;
};

/// Luhn check of a digit string (true for a valid card number checksum).
bool luhn_valid(const std::string& digits);

}  // namespace sluice::moe::postproc
