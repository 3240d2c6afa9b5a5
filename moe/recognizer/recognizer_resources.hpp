#pragma once
/// What every stream of a recognizer reads and nobody writes (sherpa-onnx's recognizer side of
/// its recognizer/stream split): the acoustic model, the streaming window, the decoder mode and
/// settings, the word LM and the lexicon decoder's vocabulary. Built once, shared by const
/// pointer between every recognizer (one per thread or lane) and every stream; thread-safe to
/// read.
///
/// Also turns a stream's own options (hotwords, decoder settings) into what its decoders need
/// (prepare), once per stream rather than once per utterance.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "config/sluice_config.hpp"
#include "moe/acoustic_model.hpp"
#include "moe/attention.hpp"
#include "moe/compute.hpp"
#include "moe/decoder/arpa_lm.hpp"
#include "moe/decoder/context_graph.hpp"
#include "moe/decoder/ctc_decoder.hpp"
#include "moe/decoder/decoder_options.hpp"
#include "moe/decoder/word_lexicon.hpp"

namespace sluice::moe {

/// Hotword lines "phrase" or "phrase weight" (weight in [0, context_graph::max_weight], default
/// `default_weight`); blank lines are skipped. errc::invalid_argument naming a bad line.
result<std::vector<hotword>> parse_hotwords(const std::vector<std::string>& lines, float default_weight);

/// A stream's own options, as a caller gives them.
struct stream_config {
  std::vector<hotword> hotwords;
  /// Decoder settings for this stream; unset: the recognizer's ([decoder] of the config).
  /// frame_ms is always the model's.
  std::optional<decoder_options> decoder;
  /// Words added to this stream's lexicon-decoder vocabulary besides the hotwords' (a tenant's
  /// lexicon additions); unused by the other decoders.
  std::vector<std::string> extra_words{};
};

/// A stream's options, checked and prepared: its hotword graph, the hotwords' words (they join
/// the lexicon decoder's vocabulary for this stream) and its decoder settings. Read-only once
/// made; one per stream, used for each of its utterances.
struct prepared_stream {
  context_graph hotwords;
  std::shared_ptr<const word_lexicon> hotword_lexicon;  ///< null unless lexicon mode with hotwords
  decoder_options decoder;
};

struct recognizer_resources {
  std::shared_ptr<const acoustic_model> model;
  attention_window window;       ///< the trained streaming window
  compute_options compute;
  decoder_options decoder;       ///< [decoder] with frame_ms from the model
  decoder_mode mode = decoder_mode::beam;  ///< [decoder] mode, "auto" resolved
  std::shared_ptr<const arpa_lm> lm;            ///< null: no word LM
  std::shared_ptr<const word_lexicon> lexicon;  ///< the lexicon decoder's vocabulary; null unless lexicon mode

  /// Loads the word LM from <model dir>/lm.arpa when `use_lm` and it exists, resolves the decoder
  /// mode and, for the lexicon decoder, builds its vocabulary (the LM's words and the lexicon
  /// file's: decoder.lexicon_file, else <model dir>/lexicon.txt when present). Errors: no model,
  /// a bad LM or lexicon file, lexicon mode with no vocabulary.
  static result<std::shared_ptr<const recognizer_resources>> create(const config::sluice_config& cfg,
                                                                    std::shared_ptr<const acoustic_model> model,
                                                                    bool use_lm = true);
  /// The word LM create() loads: <model dir>/lm.arpa when `use_lm` and it exists, else null.
  /// Needs no model, so a caller may read it while the model loads (engine_resources::load).
  static result<std::shared_ptr<const arpa_lm>> load_lm(const config::sluice_config& cfg, bool use_lm = true);
  /// create() with the LM already loaded by load_lm() (null: none).
  static result<std::shared_ptr<const recognizer_resources>> create_with_lm(const config::sluice_config& cfg,
                                                                            std::shared_ptr<const acoustic_model> model,
                                                                            std::shared_ptr<const arpa_lm> lm);

  /// Checks and prepares a stream's options: errc::invalid_argument naming a hotword the
  /// vocabulary cannot spell or a weight out of range, errc::invalid_config for bad decoder
  /// settings.
  result<prepared_stream> prepare(const stream_config& config) const;

  /// A decoder for one utterance of a stream prepared by prepare(): this recognizer's mode, LM
  /// and vocabulary plus the stream's hotwords and settings. `stream` must outlive the decoder.
  result<ctc_decoder> make_decoder(const prepared_stream& stream) const;
};

}  // namespace sluice::moe
