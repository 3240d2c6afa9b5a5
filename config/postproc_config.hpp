#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [postproc]: what turns the decoder's words into the display form of a result (moe/postproc):
/// inverse text normalisation, punctuation/casing, redaction, and tenants' rules.
struct postproc_config {
  /// Post-process results at all. false: the display form is the lexical form and nothing is
  /// redacted (only for debugging: card numbers then reach every output).
  bool enabled = true;
  /// The ITN grammar file; empty: the one shipped in the repository (compiled in).
  std::string itn_grammar;
  /// The punctuation and casing model's directory (punct.bin, vocab.txt), relative to the working
  /// directory as [model] dir is. The default (default_punct_model) missing: simple rules (first
  /// word and "I" capitalised, a period after finals) with one warning; any other directory that
  /// is missing or does not load is an error at start; empty: the rules, asked for.
  std::string punct_model = default_punct_model;
  static constexpr const char* default_punct_model = "models/punct";
  /// Redact sensitive data (cards, expiry, CVV, SSN, accounts, e-mail) in streams whose tenant
  /// sets no [redaction] of its own (streams without a tenant too).
  bool redact = true;
  /// A sensitive-number context (a card/account/SSN/CVV/expiry context word, a masked number, a
  /// digit run read one by one at the end of a final) stays open for this many of the stream's
  /// next finals, so a number read over several utterances is masked in every piece; 0: each
  /// final is redacted alone (and a digit run ending a final is not masked for what may follow).
  int redact_carry_finals = 2;
  /// ... and for at most this long (ms of stream time) after what opened it.
  int redact_carry_ms = 15000;
  /// Directory of tenant files (<tenant id>.toml, see docs in moe/postproc/tenant_store.hpp);
  /// empty: tenants exist only through the HTTP API.
  std::string tenants_dir;
  /// How often the tenant directory is checked for changed files (ms).
  int tenants_poll_ms = 1000;

  template <class V>
  void visit(V&& v) {
    v("enabled", enabled, any_bool{}, "post-process results (ITN, casing, redaction); false: display = lexical");
    v("itn_grammar", itn_grammar, any_string{}, "ITN grammar file; empty: the shipped one");
    v("punct_model", punct_model, any_string{}, "punctuation/casing model directory; the default missing: rules with a warning; empty: rules");
    v("redact", redact, any_bool{}, "redact sensitive data for streams whose tenant sets no [redaction]");
    v("redact_carry_finals", redact_carry_finals, range{0, 100},
      "finals a card/account/SSN context or an unfinished digit run stays open for; 0: none");
    v("redact_carry_ms", redact_carry_ms, range{0, 3600000}, "at most this long after what opened it (ms)");
    v("tenants_dir", tenants_dir, any_string{}, "directory of <tenant>.toml files, watched; empty: none");
    v("tenants_poll_ms", tenants_poll_ms, range{50, 3600000}, "how often the tenant directory is checked (ms)");
  }
  std::string check() const { return {}; }
};

}  // namespace sluice::config
