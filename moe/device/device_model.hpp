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
#include "moe/stream_state.hpp"
#include "moe/workspace.hpp"

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

/// One live stream of a device_model: its host front end (a stream_state: input buffering,
/// CMVN, descriptors, the x4 convolutions, positions, chunking and finish(); the stream_state's
/// own CPU caches stay empty) and, in device memory, per layer its key/value cache (left_chunks
/// x chunk_frames frames) and its context rows. Made by device_model::open_stream(), stepped by
/// device_model::step(); not thread-safe; must not outlive its device_model. Its device memory
/// goes back to the model's pool when it is destroyed, for the next open_stream().
class device_stream {
 public:
  ~device_stream();
  device_stream(const device_stream&) = delete;
  device_stream& operator=(const device_stream&) = delete;

  /// Input and its end: accept_fbank(), finish(), ready_frames(), done(), position().
  stream_state& host() { return state_; }
  const stream_state& host() const { return state_; }
  /// A new utterance (positions from 0, caches empty).
  void reset();
  /// Frames of keys and values the caches hold now.
  int64_t cached_frames() const { return kv_len_; }

 private:
  friend class device_model;
  struct caches;
  explicit device_stream(stream_state state);

  stream_state state_;
  std::unique_ptr<caches> caches_;
  int64_t kv_len_ = 0, ctx_len_ = 0;
};

/// One stream's output of a step: logits (or log-probabilities) of its frames [p0, p0 + n_frames).
struct stream_chunk {
  int64_t p0 = 0;
  int64_t n_frames = 0;
  int32_t vocab = 0;
  std::vector<float> logits;  ///< f32 [n_frames, vocab]
};

class device_model {
 public:
  /// Uploads `model`'s weights to `dev`, which must outlive the result. `host`: how the host
  /// front ends compute (SIMD level, GEMM choice). Errors: the backend's status and message
  /// (errc::unavailable when it is out of memory or has no device).
  static result<std::unique_ptr<device_model>> create(std::shared_ptr<const acoustic_model> model,
                                                      kernels::backend& dev, const compute_options& host = {});
  ~device_model();
  device_model(const device_model&) = delete;
  device_model& operator=(const device_model&) = delete;

  /// Logits (or log-probabilities) of each utterance, in forward_result's layout, with the
  /// trained attention window. Errors: errc::invalid_argument for a null fbank with frames or a
  /// value that is not finite (naming the utterance, frame and bin); the backend's failures.
  result<std::vector<forward_result>> forward(std::span<const fbank_view> utterances,
                                              const device_forward_options& options = {});

  /// A live stream with its caches on the device (the trained window, which must be bounded:
  /// errc::unsupported otherwise).
  result<std::unique_ptr<device_stream>> open_stream();

  /// One batched step of live streams on the device: each takes what it has ready, at most
  /// max_chunks (>= 1) chunks (stream_state::step_frames), all in one forward; the result holds
  /// each stream's frames, in the order given. The logits of a stream do not depend on how its
  /// input was cut or batched: fed whole and finished, they equal the offline forward's.
  /// Errors: errc::invalid_argument (a null or repeated stream, one of another model); the
  /// backend's failures. After a failure the step's input is consumed and its streams' caches
  /// are undefined: the utterances are lost (reset() the streams to use them again).
  result<std::vector<stream_chunk>> step(std::span<device_stream* const> streams, int64_t max_chunks = all_chunks,
                                         const device_forward_options& options = {});

  /// Threads that run the host front ends (default 1: the calling thread only): the streams'
  /// in step(), the utterances' CMVN and descriptors in forward(). A GPU keeps thousands of
  /// streams at real time, more than one core's front ends.
  void set_host_threads(int n) { host_threads_ = n < 1 ? 1 : n; }

  /// Wall time of the last step() or forward(): the host front ends (step: buffering, CMVN,
  /// descriptors and the convolutions of every stream; forward: CMVN and descriptors), on
  /// set_host_threads() threads, and the rest (upload, the device's work, download), ms.
  struct step_timing {
    double host_ms = 0, device_ms = 0;
  };
  step_timing last_step_timing() const { return timing_; }

  /// Device allocations open_stream() has made: the memory of an ended stream is kept for the
  /// next one, so this is the most streams open at once, not how many were opened.
  int64_t cache_allocations() const { return cache_allocations_; }

  /// Bytes of device memory the weights take.
  std::size_t weight_bytes() const { return weight_bytes_; }
  kernels::backend& device() { return *dev_; }

 private:
  struct impl;
  device_model(std::shared_ptr<const acoustic_model> model, kernels::backend& dev);
  // The encoder blocks and the CTC head over n rows already in the device's x and acoustic
  // buffers; caches: [n_layers][segs] for streams, null offline. The logits, downloaded.
  result<std::vector<float>> encode(int64_t n, std::span<const kernels::row_segment> segs,
                                    const std::vector<kernels::stream_cache>* caches,
                                    const device_forward_options& options, std::vector<forward_result>* trace);

  std::shared_ptr<const acoustic_model> model_;
  kernels::backend* dev_;
  std::unique_ptr<impl> impl_;
  std::size_t weight_bytes_ = 0;
  std::vector<workspace> host_ws_;  // per host thread: the streams' front ends (convolutions)
  int host_threads_ = 1;
  int64_t cache_allocations_ = 0;
  compute_options host_compute_;
  step_timing timing_;
};

}  // namespace sluice::moe
