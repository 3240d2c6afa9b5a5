#pragma once
/// The model's input stage, per stream: global CMVN, the x4 convolutional subsampling (two
/// 3x3 stride-2 convolutions with ReLU, then a linear layer to d_model) and the frame acoustic
/// descriptors of the level-1 router.
///
/// Subsampled frame t reads input frames 4t .. 4t+6 (and its descriptors average frames
/// 4t .. 4t+3), so the frontend buffers input until a frame's last input arrives, and keeps
/// only what later frames still need. Feeding the frames in any pieces gives the same output
/// as feeding them at once.

#include <cstdint>
#include <limits>
#include <vector>

#include "moe/acoustic_model.hpp"
#include "moe/compute.hpp"
#include "moe/workspace.hpp"

namespace sluice::moe {

/// Subsampled frames the convolutions make from `n_frames` input frames (0 below 7).
int64_t subsampled_length(int64_t n_frames);

/// Acoustic descriptors per raw log-mel frame, in model.py's order: energy (logsumexp over
/// bins) / 10; SNR proxy (energy - the utterance's running minimum energy) / 10; log spectral
/// flatness (log geometric mean - log arithmetic mean of the mel powers); entropy of the
/// normalised mel powers / log(n_mels).
inline constexpr int n_descriptors = 4;

/// Per raw log-mel frame (fbank f32 [n_frames, n_mels]): frames f32 [n_frames, n_mels] with
/// CMVN applied, and desc f32 [n_frames, 4] its descriptors; running_min carries the utterance's
/// lowest energy so far (start at +infinity). powers and peaks are scratch.
void normalise_frames(const compute_ctx& ctx, const frontend_weights& w, int64_t n_mels, const float* fbank,
                      int64_t n_frames, float* frames, float* desc, float& running_min, std::vector<float>& powers,
                      std::vector<float>& peaks);

/// acoustic f32 [n, 4]: subsampled frame t's descriptors, the mean of desc rows 4t .. 4t+3.
void average_descriptors(const float* desc, int64_t n, float* acoustic);

/// im2col of a 3x3 stride-2 convolution: in f32 [>= 2 rows_out + 1, bins, channels] ->
/// patches f32 [rows_out, (bins - 3) / 2 + 1, 9 * channels], ordered (kt, kf, channel).
void conv_patches(const float* in, int64_t rows_out, int64_t bins, int64_t channels, float* patches);

/// Commits ws's frontend buffers for conv_block's largest call (preallocation).
void preallocate_frontend(const architecture& arch, workspace& ws);

class frontend {
 public:
  /// `model` must outlive this object.
  explicit frontend(const acoustic_model& model);

  /// Appends raw log-mel frames, f32 [n_frames, n_mels].
  void accept(const compute_ctx& ctx, const float* fbank, int64_t n_frames);

  /// Subsampled frames that take() can produce now.
  int64_t ready() const;

  /// Produces the next `n` <= ready() subsampled frames: x f32 [n, d_model] and their
  /// descriptors f32 [n, 4] (averaged over input frames 4t .. 4t+3).
  void take(const compute_ctx& ctx, int64_t n, float* x, float* acoustic, workspace& ws);

  /// Back to the start of an utterance.
  void reset();

 private:
  void conv_block(const compute_ctx& ctx, int64_t t0, int64_t n, float* x, workspace& ws);

  const acoustic_model* model_;
  int64_t n_mels_;
  std::vector<float> frames_;  // f32 [>= head_ + rows_, n_mels], CMVN applied; row head_ = input frame 4 * (frames taken)
  std::vector<float> desc_;    // f32 [>= head_ + rows_, 4], descriptors of the same frames
  std::vector<float> powers_;  // scratch f32 [n_frames, n_mels]: e^(x - max of the frame)
  std::vector<float> peak_;    // scratch f32 [n_frames]: max of each frame
  int64_t head_ = 0;  // rows before it are taken (dropped); reclaimed by accept()
  int64_t rows_ = 0;   // live rows from head_
  float running_min_ = std::numeric_limits<float>::infinity();
};

}  // namespace sluice::moe
