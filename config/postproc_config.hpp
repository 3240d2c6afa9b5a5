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
  /// The punctuation and casing model's directory (punct.bin, vocab.txt: models/punct); empty:
  /// simple rules (first word and "I" capitalised, a period after finals).
  std::string punct_model;
  /// Redact sensitive data (cards, expiry, CVV, SSN, accounts, e-mail) in streams whose tenant
  /// sets no [redaction] of its own (streams without a tenant too).
  bool redact = true;
  /// Directory of tenant files (<tenant id>.toml, see docs in moe/postproc/tenant_store.hpp);
  /// empty: tenants exist only through the HTTP API.
  std::string tenants_dir;
  /// How often the tenant directory is checked for changed files (ms).
  int tenants_poll_ms = 1000;

  template <class V>
  void visit(V&& v) {
    v("enabled", enabled, any_bool{}, "post-process results (ITN, casing, redaction); false: display = lexical");
    v("itn_grammar", itn_grammar, any_string{}, "ITN grammar file; empty: the shipped one");
    v("punct_model", punct_model, any_string{}, "punctuation/casing model directory (models/punct); empty: rules");
    v("redact", redact, any_bool{}, "redact sensitive data for streams whose tenant sets no [redaction]");
    v("tenants_dir", tenants_dir, any_string{}, "directory of <tenant>.toml files, watched; empty: none");
    v("tenants_poll_ms", tenants_poll_ms, range{50, 3600000}, "how often the tenant directory is checked (ms)");
  }
  std::string check() const { return {}; }
};

}  // namespace sluice::config
