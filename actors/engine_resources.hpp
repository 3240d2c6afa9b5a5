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
#include "moe/postproc/postprocessor.hpp"
#include "moe/postproc/tenant_store.hpp"
#include "moe/recognizer/recognizer_resources.hpp"
#include "moe/workspace.hpp"

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

  /// Results' display form and redaction; null when [postproc] enabled = false (or resources
  /// built by hand): the display form is then the lexical one and nothing is masked.
  std::shared_ptr<const moe::postproc::postprocessor> postproc;
  /// Tenants' hotwords, lexicon additions and redaction rules (never null after create()). The
  /// one shared thing actors read that changes: it is internally locked and hands out immutable
  /// profiles (see tenant_store.hpp); the tenant watcher actor reloads it.
  std::shared_ptr<moe::postproc::tenant_store> tenants;

  /// Builds the recognizer resources (moe::recognizer_resources::create: LM, decoder mode,
  /// vocabulary), the expert placement, the fbank and post-processing. Errors: a placement that does not fit (more shards than experts), a bad LM or
  /// lexicon file, lexicon mode with no vocabulary, fbank settings, a bad ITN grammar file
  /// (postproc.itn_grammar) or punctuation model (postproc.punct_model), a postproc.tenants_dir that is not a directory. Tenant files are read
  /// once here; a broken one is logged and skipped, as on every later reload.
  static result<std::shared_ptr<const engine_resources>> create(const config::sluice_config& cfg,
                                                                std::shared_ptr<const moe::acoustic_model> model,
                                                                bool use_lm = true);
  /// create() with the model read from cfg.model.dir (moe::load_model), the word LM and the
  /// post-processing (ITN grammar, punctuation model) read on two more threads meanwhile: the
  /// same resources, ready sooner where there are cores for it (what `sluice transcribe` and
  /// `sluice serve` start with). Errors: the model's first, then create()'s, in its order.
  static result<std::shared_ptr<const engine_resources>> load(const config::sluice_config& cfg, bool use_lm = true);

  /// The largest micro-batch the batcher makes ([engine] preallocate): token_budget tokens
  /// (more only when one stream's step alone is longer), a stream's step of at most
  /// max_chunks_per_step chunks, the expert shards plus the overflow block.
  moe::step_bounds largest_step() const;
  /// The most (token, expert) pairs one token block can hold: every token of the largest step
  /// with each of its top_k experts (the expert actors' and spillways' preallocation).
  int64_t largest_block_pairs() const;
};

}  // namespace sluice::actors
