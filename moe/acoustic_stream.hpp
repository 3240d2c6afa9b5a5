#pragma once
/// One audio stream's run of the acoustic model on its own: fbank frames in as they arrive,
/// CTC logits out chunk by chunk. A stream_state (everything remembered per stream) stepped
/// by a one-stream micro_batch with every expert local; the model is shared and read-only.
///
/// The logits equal forward_offline's with the same window, whatever pieces the frames come
/// in: chunk c (frames [c * chunk, (c + 1) * chunk)) is emitted once input frame
/// 4 * ((c + 1) * chunk - 1) + 6 has arrived, and finish() emits the last partial chunk.
/// Not thread-safe; one stream is driven by one actor at a time.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "config/error.hpp"
#include "moe/acoustic_model.hpp"
#include "moe/attention.hpp"
#include "moe/compute.hpp"
#include "moe/local_experts.hpp"
#include "moe/micro_batch.hpp"
#include "moe/stream_state.hpp"

namespace sluice::moe {

struct stream_options {
  /// Attention window; unset: model.json's "streaming" section. chunk_frames must be > 0.
  std::optional<attention_window> window;
  compute_options compute;
};

/// Logits of consecutive output (40 ms) frames of a stream.
struct logits_block {
  int64_t first_frame = 0;    ///< stream frame index of row 0
  int64_t n_frames = 0;
  int32_t vocab = 0;
  std::vector<float> logits;  ///< f32 [n_frames, vocab]
};

class acoustic_stream {
 public:
  /// errc::invalid_argument for a null model or a window that cannot stream (chunk_frames 0,
  /// left_chunks < -1).
  static result<acoustic_stream> create(std::shared_ptr<const acoustic_model> model, stream_options options = {});

  /// Appends raw log-mel frames f32 [n_frames, n_mels]; returns the logits of every chunk this
  /// completed (possibly none). errc::invalid_argument after finish(), for a null pointer with
  /// frames or a value that is not finite (the stream is unchanged then).
  result<logits_block> accept_fbank(const float* frames, int64_t n_frames);

  /// Ends the utterance: the logits of the frames not yet emitted (the last partial chunk).
  /// Further input needs reset().
  result<logits_block> finish();

  /// Starts a new utterance (positions from 0, empty caches), keeping the options.
  void reset();

  /// Output frames emitted so far.
  int64_t frames_emitted() const { return state_.position(); }
  attention_window window() const { return state_.window(); }
  /// Frames of keys/values each layer holds now: at most left_chunks * chunk_frames between
  /// calls (unbounded when left_chunks is -1).
  int64_t cached_frames() const { return state_.cached_frames(); }
  /// Buffer growths of the stream's workspace so far (flat once the stream is warm).
  int64_t growths() const { return batch_.growths(); }

 private:
  acoustic_stream(std::shared_ptr<const acoustic_model> model, stream_state state, compute_options compute);
  result<logits_block> run();

  std::shared_ptr<const acoustic_model> model_;
  stream_state state_;
  micro_batch batch_;
  local_experts experts_;
};

}  // namespace sluice::moe
