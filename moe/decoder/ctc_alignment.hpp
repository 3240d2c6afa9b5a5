#pragma once
/// The best path (Viterbi) of a given CTC label sequence through an utterance's frames: where each
/// token's spike lies and how sure the model was of it. The beam search finds *which* labels were
/// said by summing over all their paths; this finds the single most probable of those paths to
/// time the words, so timestamps and confidences mean the same for partial and final results.

#include <cstdint>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "moe/decoder/ctc_frames.hpp"
#include "moe/decoder/decode_result.hpp"

namespace sluice::moe {

/// One aligned_token per label (frames relative to the first stored frame). `labels` holds no
/// blanks; equal neighbours need a blank frame between them. On equally good paths a token's spike
/// starts as late as possible (staying in a state wins ties). errc::invalid_argument when no path
/// reads `labels` (more labels than frames allow, or a label absent from the frames it needs).
/// Cost: O(frames * labels) time (only states on some complete path are computed); its scratch
/// (frames * (2 * labels + 1) bytes and a few arrays of states) is kept per thread and reused,
/// the back pointers only up to 4 MiB. `blank_alias` >= 0: a token the decoder read as a blank
/// (the lexicon decoder's <space> between words): a blank state's frame may be that token
/// instead, whichever the frame holds more probable; it must not be one of `labels`.
result<std::vector<aligned_token>> align_labels(const frame_store& frames, std::span<const int32_t> labels,
                                                int32_t blank_id, int32_t vocab_size, int32_t blank_alias = -1);

}  // namespace sluice::moe
