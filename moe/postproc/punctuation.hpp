#pragma once
/// Punctuation and casing for the display form. A model (moe/punct's punctuator, connected by
/// the engine) or the rule fallback decides, per spoken word, whether it starts with a capital and
/// which mark follows it; post-processing carries the decisions onto the written tokens (a
/// written token is capitalised when its first spoken word is, and takes its last spoken word's
/// mark).

#include <memory>
#include <string>
#include <vector>

namespace sluice::moe::postproc {

enum class trailing_mark { none, period, comma, question };

/// "", ".", ",", "?".
const char* to_string(trailing_mark m);

struct punct_decision {
  bool capitalize = false;
  trailing_mark mark = trailing_mark::none;
};

/// What a punctuation model implements. `words` are lower-case spoken words of one utterance
/// (partial or final); the reply has one decision per word (a reply of another length is ignored
/// and the rules are used). Must be safe to call from several threads at once.
class punctuation_hook {
 public:
  virtual ~punctuation_hook() = default;
  virtual std::vector<punct_decision> punctuate(const std::vector<std::string>& words, bool is_final) const = 0;
};

/// The fallback when no model is loaded: the first word capitalised, "i" (and i'm, i'll, i've,
/// i'd) capitalised, a period after the last word of a final (none on partials: the sentence is
/// not over).
class rule_punctuation final : public punctuation_hook {
 public:
  std::vector<punct_decision> punctuate(const std::vector<std::string>& words, bool is_final) const override;
};

}  // namespace sluice::moe::postproc
