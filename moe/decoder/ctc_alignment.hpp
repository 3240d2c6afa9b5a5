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
/// `blank_alias` >= 0: a token the decoder read as a blank (the lexicon decoder's <space> between
/// words): a blank state's frame may be that token instead, whichever the frame holds more
/// probable; it must not be one of `labels`. A fresh ctc_aligner's first answer: a decoder that
/// aligns again and again as the utterance grows keeps a ctc_aligner instead.
result<std::vector<aligned_token>> align_labels(const frame_store& frames, std::span<const int32_t> labels,
                                                int32_t blank_id, int32_t vocab_size, int32_t blank_alias = -1);

/// align_labels for one utterance at a time, remembering its work between calls. A decoder
/// aligns its best hypothesis after every chunk of frames, and that hypothesis mostly grows at its
/// end: aligning the whole utterance again each time costs O(frames x labels) per partial result,
/// so the utterance's partials together grow with its length squared.
///
/// The Viterbi value of state s at frame t depends only on the states up to s, so the rows (one
/// per frame: the finite states' values and back pointers) stay valid for a new label sequence
/// up to the blank after the labels it shares with the last call's. A call recomputes only the
/// rows from the first frame at which a state past that blank can be reached, then the frames
/// appended since. A row holds only the states some path reaches, their back pointers always and
/// their values at every 16th frame (a restart between recomputes up to 15 rows more): about
/// 3/4 of a byte per reachable state and frame.
/// The answer equals align_labels' (a fresh aligner's) to the bit: the same additions and
/// comparisons on the same values.
///
/// Between reset()s each call's frame store must hold the previous call's frames, unchanged, with
/// any new frames appended (a decoder's store of one utterance); a store with fewer frames than
/// the last call's starts over. One per decoder; not for concurrent use.
class ctc_aligner {
 public:
  ctc_aligner(int32_t blank_id, int32_t vocab_size, int32_t blank_alias = -1);
  result<std::vector<aligned_token>> align(const frame_store& frames, std::span<const int32_t> labels);
  /// A new utterance: forgets the rows (keeps their memory for the next unless above 256 KiB).
  void reset();
  /// Heap bytes held.
  std::size_t memory_bytes() const;
  /// Rows (frames) computed by every call so far: what reuse saved, for tests and benchmarks.
  int64_t rows_computed() const { return rows_computed_; }

 private:
  struct row {
    int32_t first = 0, last = -1;  ///< the states finite at this frame (none when first > last)
    uint32_t back = 0;             ///< where their back pointers start in back_ (four to a byte)
    uint32_t values = 0;           ///< where their values start in values_ (the end of the kept values before)
    bool has_values = true;        ///< false: their values were not kept
  };
  // Computes and stores row t from the dense `prev_` (row t - 1's values on its finite states).
  void compute_row(const frame_store& frames, int32_t t);
  void load_emissions(std::span<const token_log_prob> frame, int32_t lo, int32_t hi);

  int32_t blank_id_, vocab_size_, blank_alias_;
  std::vector<int32_t> labels_;  ///< the labels the rows were computed for
  std::vector<row> rows_;
  std::vector<double> values_;
  std::vector<uint8_t> back_;  ///< states stepped over to enter each state (0, 1 or 2), 2 bits each
  int64_t rows_computed_ = 0;
  // Scratch, per state of the current labels (the dense arrays offset by 2, so that state s may
  // read s - 1 and s - 2 without a test) or per token.
  std::vector<int32_t> token_of_;
  std::vector<double> skip_pen_;  ///< 0 where a state may be entered from two before, else -inf
  std::vector<double> emit_, prev_buf_, cur_buf_;
  std::vector<uint8_t> step_buf_;
  std::vector<float> dense_;
};

}  // namespace sluice::moe
