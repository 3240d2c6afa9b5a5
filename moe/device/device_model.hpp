#pragma once
/// The acoustic model resident on a compute device (kernels::backend), and its batched offline
/// forward written only against the backend's op table: the same code runs on the CPU backend
/// (where it equals forward_offline) and on a GPU. Weights are uploaded once at create() and
/// stay on the device; per call only the normalised input frames and the frames' acoustic
/// descriptors go up (CMVN and descriptors are computed on the host: they are a few
/// multiply-adds per bin) and the logits come back.
///
/// A batch is any number of utterances of any lengths: their rows are concatenated and every
/// op runs once over all of them; attention and the context mean stay inside each utterance.
/// Not thread-safe (one backend, one caller at a time).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "kernels/backend.hpp"
#include "moe/acoustic_model.hpp"
#include "moe/forward.hpp"

namespace sluice::moe {

/// One utterance's raw log-mel frames, f32 [n_frames, n_mels].
struct fbank_view {
  const float* data = nullptr;
  int64_t n_frames = 0;
};

struct device_forward_options {
  bool log_probs = false;  ///< log_softmax the logits on the device (the CTC decoders' input)
  bool trace = false;      ///< also return every block's output and expert choices
};

class device_model {
 public:
  /// Uploads `model`'s weights to `dev`, which must outlive the result. Errors: the backend's
  /// status and message (errc::unavailable when it is out of memory or has no device).
  static result<std::unique_ptr<device_model>> create(std::shared_ptr<const acoustic_model> model,
                                                      kernels::backend& dev);
  ~device_model();
  device_model(const device_model&) = delete;
  device_model& operator=(const device_model&) = delete;

  /// Logits (or log-probabilities) of each utterance, in forward_result's layout, with the
  /// trained attention window. Errors: errc::invalid_argument for a null fbank with frames or a
  /// value that is not finite (naming the utterance, frame and bin); the backend's failures.
  result<std::vector<forward_result>> forward(std::span<const fbank_view> utterances,
                                              const device_forward_options& options = {});

  /// Bytes of device memory the weights take.
  std::size_t weight_bytes() const { return weight_bytes_; }
  kernels::backend& device() { return *dev_; }

 private:
  struct impl;
  device_model(std::shared_ptr<const acoustic_model> model, kernels::backend& dev);

  std::shared_ptr<const acoustic_model> model_;
  kernels::backend* dev_;
  std::unique_ptr<impl> impl_;
  std::size_t weight_bytes_ = 0;
};

}  // namespace sluice::moe
