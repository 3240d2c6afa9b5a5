#pragma once
/// Everything the acoustic model remembers about one audio stream between steps: the
/// frontend's buffered input (CMVN'd frames, descriptors, running minimum energy), per layer
/// the attention cache (bounded to left_chunks * chunk_frames frames) and the context rows,
/// and the position counter. The model is shared and read-only; this object is owned by
/// whoever owns the stream (a channel actor, an acoustic_stream) and lent to one micro_batch
/// at a time, which takes its frames and advances its caches.
///
/// Steps take whole attention chunks (chunk c = subsampled frames [c * chunk, (c + 1) *
/// chunk), ready once input frame 4 * ((c + 1) * chunk - 1) + 6 has arrived), and after
/// finish() the last partial chunk; so a stream's logits do not depend on how its input was
/// cut or batched. Not thread-safe; not to be moved while in a micro-batch (which holds its
/// address).

#include <cstdint>
#include <limits>
#include <vector>

#include "config/error.hpp"
#include "moe/acoustic_model.hpp"
#include "moe/attention.hpp"
#include "moe/compute.hpp"
#include "moe/frontend.hpp"
#include "moe/moe_layer.hpp"

namespace sluice::moe {

/// For step_frames / micro_batch::begin: every ready frame in one step.
inline constexpr int64_t all_chunks = std::numeric_limits<int64_t>::max();

/// What one encoder block remembers of earlier frames.
struct layer_state {
  kv_cache kv;
  context_cache context;
};

class stream_state {
 public:
  /// errc::invalid_argument for a bad window (check_window). A window with chunk_frames 0
  /// (full attention) cannot stream: its frames are ready only after finish(). `model` must
  /// outlive the object.
  static result<stream_state> create(const acoustic_model& model, attention_window window,
                                     compute_options compute = {});

  /// Appends raw log-mel frames f32 [n_frames, n_mels]. errc::invalid_argument after
  /// finish(), while in a micro-batch, for a null pointer with frames or a value that is not
  /// finite (the state is unchanged then).
  result<void> accept_fbank(const float* frames, int64_t n_frames);

  /// No more input: the frames after the last whole chunk become ready. Further input needs
  /// reset(). errc::invalid_argument when called twice or while in a micro-batch.
  result<void> finish();

  /// Starts a new utterance (positions from 0, empty caches, nothing buffered). Not while in
  /// a micro-batch.
  void reset();

  /// Subsampled frames a step may take now: whole chunks, or after finish() all that is left.
  int64_t ready_frames() const;
  /// The frames the next step takes when it takes at most max_chunks (>= 1) chunks.
  int64_t step_frames(int64_t max_chunks) const;
  /// Subsampled frames taken by steps so far (the position of the next one).
  int64_t position() const { return position_; }
  /// finish() was called and every frame has been taken.
  bool done() const { return finished_ && ready_frames() == 0; }
  bool finished() const { return finished_; }
  bool in_step() const { return in_step_; }
  attention_window window() const { return window_; }
  const acoustic_model& model() const { return *model_; }
  /// Frames of keys/values each layer holds now: at most left_chunks * chunk_frames between
  /// steps (unbounded when left_chunks is -1; 0 after the last step).
  int64_t cached_frames() const { return layers_.empty() ? 0 : layers_.front().kv.len; }

 private:
  friend class micro_batch;
  friend class device_model;  // runs the front end here and the blocks on a device
  stream_state(const acoustic_model& model, attention_window window, compute_options compute);

  const acoustic_model* model_;
  attention_window window_;
  compute_ctx ctx_;
  frontend front_;
  std::vector<layer_state> layers_;  // [n_layers]
  int64_t position_ = 0;
  bool finished_ = false;
  bool in_step_ = false;
};

}  // namespace sluice::moe
