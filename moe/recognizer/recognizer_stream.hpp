#pragma once
/// One audio stream of a recognizer (sherpa-onnx's OnlineStream): its model state (frontend
/// buffer, attention caches), its current utterance's CTC decoder and its own options. Made by
/// recognizer::create_stream, fed features here, stepped by recognizer::decode_streams (alone or
/// with many others), read with get_result().
///
/// Life of an utterance: accept_features* -> input_finished -> (steps) -> is_final; then
/// reset() for the next utterance, which keeps the options. A step's or decoder's failure marks
/// the stream failed (error() says why; it takes no more input until reset()); abort() gives an
/// utterance up on purpose. Not thread-safe: one owner (a lane, a test) at a time; not moved
/// while a decode step runs.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "moe/decoder/ctc_decoder.hpp"
#include "moe/decoder/decode_result.hpp"
#include "moe/recognizer/recognizer_resources.hpp"
#include "moe/stream_state.hpp"

namespace sluice::moe {

/// What a stream has recognised of its current utterance so far.
struct recognition_result {
  std::string text;
  std::vector<word_info> words;  ///< times in ms from the start of the utterance
  bool is_final = false;
  int64_t frames = 0;            ///< output (decoder) frames decoded so far
};

enum class stream_status {
  open,      ///< takes features
  finishing, ///< input finished; steps remain
  final,     ///< every frame decoded: get_result() is the final result
  failed,    ///< a step or the decoder failed: error()
  aborted,   ///< given up by its owner
};

class recognizer_stream {
 public:
  /// Appends raw log-mel frames f32 [n_frames, n_mels] (dsp/ fbank). errc::invalid_argument
  /// unless open, for a null pointer with frames or a value that is not finite (nothing taken).
  result<void> accept_features(const float* frames, int64_t n_frames);
  /// The utterance has no more input. Too short for one output frame: final at once.
  result<void> input_finished();
  /// A decode step would make progress (frames ready: whole chunks, or the rest after
  /// input_finished).
  bool is_ready() const;
  stream_status status() const { return status_; }
  bool is_final() const { return status_ == stream_status::final; }
  /// Why the stream failed (status failed), else nullopt.
  const std::optional<error>& failure() const { return failure_; }

  /// The final result once final; before, the decoder's current best (a partial result,
  /// computed now); empty for a failed or aborted stream.
  recognition_result get_result() const;

  /// Gives the current utterance up: no more steps, no result.
  void abort();
  /// Starts the next utterance with the same options (a new decoder: errors as create_stream's).
  result<void> reset();

  /// Output frames the model has produced for this utterance.
  int64_t frames_decoded() const { return state_.position(); }
  /// The model state, for schedulers that size a step (step_frames) before running it.
  const stream_state& model_state() const { return state_; }

 private:
  friend class recognizer;
  recognizer_stream(std::shared_ptr<const recognizer_resources> res, std::shared_ptr<const prepared_stream> prepared,
                    stream_state state, ctc_decoder decoder);
  void fail_with(error e);
  // After a step: the stream's logits f32 [n_frames, vocab].
  void accept_logits(std::span<const float> logits, int64_t n_frames);
  void finalize();

  std::shared_ptr<const recognizer_resources> res_;
  std::shared_ptr<const prepared_stream> prepared_;
  stream_state state_;
  std::optional<ctc_decoder> decoder_;
  stream_status status_ = stream_status::open;
  std::optional<error> failure_;
  recognition_result final_;
};

}  // namespace sluice::moe
