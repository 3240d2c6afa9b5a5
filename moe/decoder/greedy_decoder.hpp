#pragma once
/// CTC greedy (best path) decoding: the most probable token of every frame, repeats merged,
/// blanks dropped. A token's spike is the run of frames where it is the best token; its posterior
/// is the highest softmax probability in that run (see decode_result.hpp for words and times).
///
/// Streaming: one greedy_decoder per stream. accept() takes the model's logits chunk by chunk
/// (f32 [n_frames, vocab], row-major); partial() is the result so far; finalize() ends the
/// utterance, returns its result and starts the next one, keeping the absolute frame offset so
/// times stay relative to the start of the stream. Results do not depend on the chunking.
/// Not thread-safe. The token_table must outlive the decoder.

#include <cstdint>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "moe/decoder/decode_result.hpp"
#include "moe/decoder/decoder_options.hpp"
#include "moe/tokens.hpp"

namespace sluice::moe {

class greedy_decoder {
 public:
  /// errc::invalid_config when `opts` fails validate().
  static result<greedy_decoder> create(const token_table& tokens, const decoder_options& opts);

  /// Consumes `n_frames` frames of logits (f32 [n_frames, tokens.size()]). errc::invalid_argument
  /// on a size mismatch or a non-finite value (then nothing of this chunk is consumed).
  result<void> accept(std::span<const float> logits, int32_t n_frames);

  /// The current utterance's result so far.
  decode_result partial() const;

  /// The utterance's final result; the decoder then starts the next utterance at the frame after.
  decode_result finalize();

  /// Absolute index of the current utterance's first frame (from the stream's start).
  int64_t frame_offset() const { return frame_offset_; }
  /// For callers that skip audio between utterances: the next utterance starts at `frame`.
  /// Only between utterances (after create() or finalize()).
  void set_frame_offset(int64_t frame) { frame_offset_ = frame; }
  /// Frames accepted in the current utterance.
  int32_t frames() const { return n_frames_; }

 private:
  greedy_decoder(const token_table& tokens, const decoder_options& opts)
      : tokens_(&tokens), opts_(opts), prev_token_(tokens.blank_id()) {}

  const token_table* tokens_;
  decoder_options opts_;
  std::vector<aligned_token> path_;  ///< the best path's tokens so far
  int32_t prev_token_ = 0;           ///< best token of the previous frame (blank at the start)
  double score_ = 0;                 ///< sum of the best path's ln posteriors
  int32_t n_frames_ = 0;
  int64_t frame_offset_ = 0;
  std::vector<float> row_;           ///< scratch: one frame's ln posteriors
};

/// Whole-utterance greedy decoding of logits f32 [n_frames, tokens.size()] starting at frame 0.
result<decode_result> greedy_decode(std::span<const float> logits, int32_t n_frames, const token_table& tokens,
                                    const decoder_options& opts = {});

}  // namespace sluice::moe
