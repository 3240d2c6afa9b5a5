#pragma once
/// The synchronous recognizer core (DESIGN.md: "the model math is plain synchronous code with no
/// threads and no CAF"): sherpa-onnx's OnlineRecognizer shape. Shared read-only resources
/// (recognizer_resources) plus, per recognizer, the scratch memory of one batched step; streams
/// (recognizer_stream) carry everything per audio stream.
///
///     auto rec = recognizer(resources);
///     auto s = rec.create_stream({hotwords});            // result<recognizer_stream>
///     s->accept_features(fbank, n); s->input_finished();
///     while (s->is_ready()) rec.decode_streams(ptrs);     // many streams per step
///     s->get_result();                                        // text, words with times, confidence
///
/// decode_streams runs one micro-batch over the ready streams: the dense layers (attention with
/// each stream's own cache, shared experts, routers) and every routed expert, locally, for all
/// their frames at once; each stream's logits then go to its decoder. A stream's results do not
/// depend on which other streams share its steps or how its input was cut.
///
/// One recognizer per thread (lane); many recognizers may share one recognizer_resources. Not
/// thread-safe itself.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "moe/local_experts.hpp"
#include "moe/micro_batch.hpp"
#include "moe/recognizer/recognizer_resources.hpp"
#include "moe/recognizer/recognizer_stream.hpp"

namespace sluice::moe {

class recognizer {
 public:
  /// `res` must not be null.
  explicit recognizer(std::shared_ptr<const recognizer_resources> res);

  /// A new stream: errc::invalid_argument / invalid_config for bad options (prepare()), or
  /// the error of its model state's or decoder's creation.
  result<recognizer_stream> create_stream(const stream_config& config = {}) const;

  /// One batched step over the streams of `streams` that are ready (the others are left out):
  /// each gives at most `max_chunks` attention chunks (>= 1). A stream whose decoder fails is
  /// marked failed and the others go on. When the step itself fails, every stream in it is
  /// marked failed with that error (its caches may hold part of the step) and it is returned.
  /// errc::invalid_argument (nothing run) for a null or repeated stream, or one of another model.
  result<void> decode_streams(std::span<recognizer_stream* const> streams, int64_t max_chunks = all_chunks);

  const recognizer_resources& resources() const { return *res_; }
  /// Scratch buffer growths so far (flat once warm).
  int64_t growths() const { return batch_.growths(); }

 private:
  std::shared_ptr<const recognizer_resources> res_;
  micro_batch batch_;
  local_experts experts_;
  std::vector<recognizer_stream*> picked_;
  std::vector<stream_state*> states_;
};

}  // namespace sluice::moe
