#pragma once
/// One streaming CTC decoder of the kind the [decoder] mode names: greedy, prefix beam search, or
/// lexicon-constrained prefix beam search, behind the interface they share (accept, partial,
/// finalize, frame offset). What the channel actor and the tools hold per utterance.

#include <cstdint>
#include <span>
#include <string_view>
#include <variant>

#include "config/error.hpp"
#include "moe/decoder/beam_search_decoder.hpp"
#include "moe/decoder/greedy_decoder.hpp"
#include "moe/decoder/lexicon_decoder.hpp"

namespace sluice::moe {

enum class decoder_mode { greedy, beam, lexicon };

/// "greedy", "beam", "lexicon".
std::string_view to_string(decoder_mode m);

/// The mode a [decoder] mode string asks for: "auto" is lexicon when a vocabulary is at hand (an
/// LM or a lexicon file), else beam. errc::invalid_config for an unknown name, and for "lexicon"
/// with no vocabulary (every word would be spelled as unknown).
result<decoder_mode> resolve_mode(std::string_view mode, bool have_vocabulary);

class ctc_decoder {
 public:
  /// The LM, the lexicons and `tokens` must outlive the decoder; greedy ignores the LM, the
  /// lexicon and the hotwords; beam ignores the lexicon. Errors as the decoders' create().
  static result<ctc_decoder> create(decoder_mode mode, const token_table& tokens, const decoder_options& opts,
                                    const arpa_lm* lm = nullptr, lexicon_view lexicon = {},
                                    context_graph hotwords = {});

  decoder_mode mode() const { return static_cast<decoder_mode>(impl_.index()); }
  result<void> accept(std::span<const float> logits, int32_t n_frames);
  decode_result partial() const;
  decode_result finalize();
  int64_t frame_offset() const;
  void set_frame_offset(int64_t frame);
  int32_t frames() const;

 private:
  using impl = std::variant<greedy_decoder, beam_search_decoder, lexicon_decoder>;
  explicit ctc_decoder(impl d) : impl_(std::move(d)) {}
  impl impl_;
};

}  // namespace sluice::moe
