#pragma once
/// Post-processing of a transcript_event where every output sees it: the channel actor calls this
/// on each partial and final before it leaves, so WebSocket sessions, stored calls, the dashboard,
/// uploads and the CLI all get the same two forms and the same masking.

#include "actors/engine_resources.hpp"
#include "actors/messages.hpp"
#include "moe/decoder/decode_result.hpp"
#include "moe/postproc/postprocessor.hpp"

namespace sluice::actors {

/// A decoder's alternatives as events, word times moved by `offset_ms` (the utterance's start in
/// the channel; 0 where the channel adds it later).
std::vector<alternative_event> to_alternative_events(const std::vector<moe::decode_alternative>& alts, int64_t offset_ms);

/// Fills display_text, display_words and redactions from `ev.words` (the decoder's lexical words)
/// and, when the stream's redaction masks anything, replaces the masked words in `ev.text` and
/// `ev.words` too. Without a postprocessor (res.postproc null) the display form is a copy of the
/// lexical one. Events with `error` set are left alone. `carry`: the channel's redaction state
/// (moe::postproc::redaction_carry), updated by a final; finals must come in utterance order.
/// A final's alternatives are each post-processed as if they were the final (from the carry as
/// it stood before it): masked, with their display text. Where the final masked something, every
/// number an alternative says up to the end of the final's last masked span is masked too (a
/// reading one digit off a masked card fails the Luhn check by itself). The carry the next final
/// reads is widened by what any reading left open (a trailing digit run, a context). Readings
/// that then read alike (they differed only in what was masked) become one, shares added.
void apply_postproc(const engine_resources& res, const moe::postproc::postproc_options& opt, transcript_event& ev,
                    moe::postproc::redaction_carry* carry = nullptr);

}  // namespace sluice::actors
