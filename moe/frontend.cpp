#include "moe/frontend.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace sluice::moe {
namespace {

constexpr int64_t kernel = 3;
constexpr int64_t stride = 2;
constexpr int64_t taps = kernel * kernel;
constexpr int64_t factor = stride * stride;       // input frames per subsampled frame
constexpr float descriptor_scale = 10.0f;         // model.py divides energy and SNR by 10
constexpr float min_probability = 1e-12f;         // model.py's clamp inside the entropy
// Subsampled frames per im2col block: bounds the scratch memory of long utterances.
constexpr int64_t block_frames = 32;

// Output size of one 3x3 stride-2 convolution.
int64_t conv_out(int64_t n) { return n < kernel ? 0 : (n - kernel) / stride + 1; }

}  // namespace

int64_t subsampled_length(int64_t n_frames) { return conv_out(conv_out(n_frames)); }

frontend::frontend(const acoustic_model& model) : model_(&model), n_mels_(model.arch().n_mels) {}

void frontend::reset() {
  head_ = 0;
  rows_ = 0;
  running_min_ = std::numeric_limits<float>::infinity();
}

void normalise_frames(const compute_ctx& ctx, const frontend_weights& w, int64_t n_mels, const float* fbank,
                      int64_t n_frames, float* frames, float* desc, float& running_min, std::vector<float>& powers,
                      std::vector<float>& peaks) {
  const int64_t m = n_mels;
  // One vector exp over every bin of the call; then each frame's descriptors from its powers.
  if (powers.size() < static_cast<std::size_t>(n_frames * m)) powers.resize(n_frames * m);
  if (peaks.size() < static_cast<std::size_t>(n_frames)) peaks.resize(n_frames);
  float* e = powers.data();
  float* peak = peaks.data();
  for (int64_t r = 0; r < n_frames; ++r) {
    const float* in = fbank + r * m;
    peak[r] = *std::max_element(in, in + m);
    for (int64_t i = 0; i < m; ++i) e[r * m + i] = in[i] - peak[r];
  }
  ctx.ops().exp(e, e, n_frames * m);
  const float log_m = std::log(static_cast<float>(m));
  const float min_log_q = std::log(min_probability);
  for (int64_t r = 0; r < n_frames; ++r) {
    const float* in = fbank + r * m;
    const float* er = e + r * m;
    float* out = frames + r * m;
    for (int64_t i = 0; i < m; ++i) out[i] = (in[i] - w.cmvn_mean[i]) * w.cmvn_istd[i];
    float sum = 0.0f, mean = 0.0f;
    for (int64_t i = 0; i < m; ++i) {
      sum += er[i];
      mean += in[i];
    }
    mean /= static_cast<float>(m);
    const float energy = peak[r] + std::log(sum);
    const float inv_sum = 1.0f / sum;
    float ent = 0.0f;
    // q_i = e_i / sum; log q_i = x_i - energy, clamped as model.py clamps q at 1e-12.
    for (int64_t i = 0; i < m; ++i) ent -= er[i] * inv_sum * std::max(in[i] - energy, min_log_q);
    running_min = std::min(running_min, energy);
    float* d = desc + r * n_descriptors;
    d[0] = energy / descriptor_scale;
    d[1] = (energy - running_min) / descriptor_scale;
    d[2] = mean - (energy - log_m);
    d[3] = ent / log_m;
  }
}

void average_descriptors(const float* desc, int64_t n, float* acoustic) {
  constexpr int64_t nd = n_descriptors;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < nd; ++j) {
      float s = 0.0f;
      for (int64_t f = 0; f < factor; ++f) s += desc[(factor * t + f) * nd + j];
      acoustic[t * nd + j] = s / static_cast<float>(factor);
    }
}

void conv_patches(const float* in, int64_t rows_out, int64_t bins, int64_t channels, float* patches) {
  // A patch is three runs of 3 * channels contiguous values (kf, channel) of input rows.
  const int64_t out_bins = (bins - kernel) / stride + 1, run = kernel * channels;
  for (int64_t r = 0; r < rows_out; ++r)
    for (int64_t f = 0; f < out_bins; ++f) {
      float* patch = patches + (r * out_bins + f) * taps * channels;
      for (int64_t kt = 0; kt < kernel; ++kt)
        std::copy_n(in + ((stride * r + kt) * bins + stride * f) * channels, run, patch + kt * run);
    }
}

void frontend::accept(const compute_ctx& ctx, const float* fbank, int64_t n_frames) {
  const int64_t m = n_mels_;
  // The rows taken are dropped by moving head_ (take); they are reclaimed here, by moving the
  // live rows to the front, only when the buffer would have to grow or holds more dead rows than
  // live ones. Until 2026-12-06 every take() moved the rest to the front: a 10 s segment handed
  // over whole was copied once per step, quadratic in its length.
  if (head_ > 0 && (head_ >= rows_ || static_cast<std::size_t>((head_ + rows_ + n_frames) * m) > frames_.size())) {
    std::copy(frames_.begin() + head_ * m, frames_.begin() + (head_ + rows_) * m, frames_.begin());
    std::copy(desc_.begin() + head_ * n_descriptors, desc_.begin() + (head_ + rows_) * n_descriptors, desc_.begin());
    head_ = 0;
  }
  // The buffers only grow (doubling): a stream stops allocating after its first calls.
  for (auto [buf, width] : {std::pair{&frames_, m}, std::pair{&desc_, int64_t{n_descriptors}}}) {
    const auto need = static_cast<std::size_t>((head_ + rows_ + n_frames) * width);
    if (buf->size() < need) buf->resize(std::max(need, 2 * buf->size()));
  }
  normalise_frames(ctx, model_->weights().frontend, m, fbank, n_frames, frames_.data() + (head_ + rows_) * m,
                   desc_.data() + (head_ + rows_) * n_descriptors, running_min_, powers_, peak_);
  rows_ += n_frames;
}

int64_t frontend::ready() const { return subsampled_length(rows_); }

void preallocate_frontend(const architecture& a, workspace& ws) {
  // conv_block's largest call: block_frames subsampled frames, as there.
  const int64_t c = a.conv_channels, f1 = a.conv1_bins(), f2 = a.conv2_bins(), n = block_frames;
  const int64_t rows1 = stride * n + 1;
  ws.commit(ws.im2col, std::max(rows1 * f1 * taps, n * f2 * taps * c));
  ws.commit(ws.conv1_out, rows1 * f1 * c);
  ws.commit(ws.conv2_out, n * f2 * c);
}

void frontend::take(const compute_ctx& ctx, int64_t n, float* x, float* acoustic, workspace& ws) {
  const int64_t d = model_->arch().d_model;
  constexpr int64_t nd = n_descriptors;
  for (int64_t t0 = 0; t0 < n; t0 += block_frames) conv_block(ctx, t0, std::min(block_frames, n - t0), x + t0 * d, ws);
  average_descriptors(desc_.data() + head_ * nd, n, acoustic);
  // Frame n (the next to make) starts at input row 4n; everything before it is done with.
  const int64_t drop = std::min(rows_, factor * n);
  head_ += drop;
  rows_ -= drop;
  if (rows_ == 0) head_ = 0;
}

// Subsampled frames [t0, t0 + n) of the buffer: conv1 rows 2 t0 .. 2 (t0 + n) in a
// channels-last [rows, F1, C] layout, then conv2 by im2col, then the linear layer.
void frontend::conv_block(const compute_ctx& ctx, int64_t t0, int64_t n, float* x, workspace& ws) {
  const auto& a = model_->arch();
  const auto& w = model_->weights().frontend;
  const int64_t c = a.conv_channels, f1 = a.conv1_bins(), f2 = a.conv2_bins();
  const int64_t rows1 = stride * n + 1;
  const float* in = frames_.data() + (head_ + factor * t0) * n_mels_;

  float* im2col = ws.scratch(ws.im2col, std::max(rows1 * f1 * taps, n * f2 * taps * c));
  conv_patches(in, rows1, n_mels_, 1, im2col);
  float* conv1 = ws.scratch(ws.conv1_out, rows1 * f1 * c);
  ctx.dense_matmul({rows1 * f1, c, taps, im2col, taps, w.conv1.data(), c, conv1, c, w.conv1_bias.data()});
  for (int64_t i = 0; i < rows1 * f1 * c; ++i) conv1[i] = std::max(conv1[i], 0.0f);

  conv_patches(conv1, n, f1, c, im2col);
  float* conv2 = ws.scratch(ws.conv2_out, n * f2 * c);
  ctx.dense_matmul({n * f2, c, taps * c, im2col, taps * c, w.conv2.data(), c, conv2, c, w.conv2_bias.data()});
  for (int64_t i = 0; i < n * f2 * c; ++i) conv2[i] = std::max(conv2[i], 0.0f);
  ctx.linear(w.out, conv2, n, x);
}

}  // namespace sluice::moe
