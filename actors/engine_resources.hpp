#pragma once
/// What every actor of one engine reads and nobody writes: the model, the expert placement, the
/// feature extractor, the word LM, the config. Built once before the actors start and shared
/// by const pointer (the only state actors share). The recognizer's part (model, window, decoder
/// mode and settings, LM, lexicon) is moe::recognizer_resources, built by it; the fields below
/// that repeat it (lm, decoder, decoder_mode, lexicon, window) point at the same objects.

#include <memory>

#include "config/error.hpp"
#include "config/sluice_config.hpp"
#include "dsp/fbank.hpp"
#include "moe/acoustic_model.hpp"
#include "moe/attention.hpp"
#include "moe/compute.hpp"
#include "moe/decoder/arpa_lm.hpp"
#include "moe/decoder/ctc_decoder.hpp"
#include "moe/decoder/decoder_options.hpp"
#include "moe/decoder/word_lexicon.hpp"
#include "moe/expert_placement.hpp"
#include "moe/recognizer/recognizer_resources.hpp"

namespace sluice::actors {

struct engine_resources {
  config::sluice_config cfg;
  std::shared_ptr<const moe::acoustic_model> model;
  moe::expert_placement placement;
  std::shared_ptr<const dsp::fbank_computer> fbank;  ///< the model's own fbank settings
  std::shared_ptr<const moe::arpa_lm> lm;            ///< null: no word LM
  moe::decoder_options decoder;                      ///< [decoder] with frame_ms from the model
  moe::decoder_mode decoder_mode = moe::decoder_mode::beam;  ///< [decoder] mode, "auto" resolved
  std::shared_ptr<const moe::word_lexicon> lexicon;  ///< the lexicon decoder's vocabulary; null unless lexicon mode
  moe::attention_window window;                      ///< the trained streaming window
  moe::compute_options compute;
  std::shared_ptr<const moe::recognizer_resources> recognizer;  ///< never null once created

  /// Builds the recognizer resources (moe::recognizer_resources::create: LM, decoder mode,
  /// vocabulary), the expert placement and the fbank. Errors: a placement that does not fit (more
  /// shards than experts), a bad LM or lexicon file, lexicon mode with no vocabulary, fbank
  /// settings.
  static result<std::shared_ptr<const engine_resources>> create(const config::sluice_config& cfg,
                                                                std::shared_ptr<const moe::acoustic_model> model,
                                                                bool use_lm = true);
};

}  // namespace sluice::actors
