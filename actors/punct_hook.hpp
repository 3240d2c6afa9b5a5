#pragma once
/// Connects the punctuation and casing model (moe/punct) to post-processing (moe/postproc's
/// punctuation_hook), selected by [postproc] punct_model.

#include <memory>

#include "moe/postproc/punctuation.hpp"
#include "moe/punct/punctuator.hpp"

namespace sluice::actors {

/// The model's marks for each word. Finals end a sentence: their last word gets '.' unless the
/// model chose '?'. Partials do not: the last word of a partial carries no mark, since the
/// sentence (and the model's view of that word's right-hand context) is not complete.
/// Thread-safe, as punctuation_hook requires (punctuator::run is const and keeps no scratch).
class model_punctuation final : public moe::postproc::punctuation_hook {
 public:
  explicit model_punctuation(std::shared_ptr<const moe::punct::punctuator> model) : model_(std::move(model)) {}
  std::vector<moe::postproc::punct_decision> punctuate(const std::vector<std::string>& words,
                                                       bool is_final) const override;

 private:
  std::shared_ptr<const moe::punct::punctuator> model_;
};

}  // namespace sluice::actors
