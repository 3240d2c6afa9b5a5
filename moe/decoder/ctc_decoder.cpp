#include "moe/decoder/ctc_decoder.hpp"

#include <string>

namespace sluice::moe {

std::string_view to_string(decoder_mode m) {
  switch (m) {
    case decoder_mode::greedy: return "greedy";
    case decoder_mode::beam: return "beam";
    case decoder_mode::lexicon: return "lexicon";
  }
  return "?";
}

result<decoder_mode> resolve_mode(std::string_view mode, bool have_vocabulary) {
  if (mode == "greedy") return decoder_mode::greedy;
  if (mode == "beam") return decoder_mode::beam;
  if (mode == "auto") return have_vocabulary ? decoder_mode::lexicon : decoder_mode::beam;
  if (mode == "lexicon") {
    if (!have_vocabulary)
      return fail(errc::invalid_config,
                  "decoder.mode = \"lexicon\" needs a vocabulary: lm.arpa in the model directory or "
                  "decoder.lexicon_file");
    return decoder_mode::lexicon;
  }
  return fail(errc::invalid_config,
              "decoder.mode = \"" + std::string(mode) + "\": choose auto, greedy, beam or lexicon");
}

result<ctc_decoder> ctc_decoder::create(decoder_mode mode, const token_table& tokens, const decoder_options& opts,
                                        const arpa_lm* lm, lexicon_view lexicon, context_graph hotwords) {
  switch (mode) {
    case decoder_mode::greedy: {
      auto d = greedy_decoder::create(tokens, opts);
      if (!d) return tl::unexpected(d.error());
      return ctc_decoder(impl(std::in_place_index<0>, std::move(*d)));
    }
    case decoder_mode::beam: {
      auto d = beam_search_decoder::create(tokens, opts, lm, std::move(hotwords));
      if (!d) return tl::unexpected(d.error());
      return ctc_decoder(impl(std::in_place_index<1>, std::move(*d)));
    }
    case decoder_mode::lexicon: {
      auto d = lexicon_decoder::create(tokens, opts, lexicon, lm, std::move(hotwords));
      if (!d) return tl::unexpected(d.error());
      return ctc_decoder(impl(std::in_place_index<2>, std::move(*d)));
    }
  }
  return fail(errc::invalid_argument, "unknown decoder mode");
}

result<void> ctc_decoder::accept(std::span<const float> logits, int32_t n_frames) {
  return std::visit([&](auto& d) { return d.accept(logits, n_frames); }, impl_);
}
decode_result ctc_decoder::partial() const {
  return std::visit([](const auto& d) { return d.partial(); }, impl_);
}
decode_result ctc_decoder::finalize() {
  return std::visit([](auto& d) { return d.finalize(); }, impl_);
}
int64_t ctc_decoder::frame_offset() const {
  return std::visit([](const auto& d) { return d.frame_offset(); }, impl_);
}
void ctc_decoder::set_frame_offset(int64_t frame) {
  std::visit([&](auto& d) { d.set_frame_offset(frame); }, impl_);
}
int32_t ctc_decoder::frames() const {
  return std::visit([](const auto& d) { return d.frames(); }, impl_);
}

}  // namespace sluice::moe
