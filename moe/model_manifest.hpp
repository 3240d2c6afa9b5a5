#pragma once
/// model.json of a model directory: format, version, the architecture (the fields of
/// tools/train/model.py's ModelConfig), feature settings and streaming defaults.
/// The architecture is validated on its own (divisibility, ranges); the weights are checked
/// against it separately (weight_manifest.hpp).

#include <cstdint>
#include <string>
#include <string_view>

#include "config/error.hpp"
#include "config/fbank_config.hpp"

namespace sluice::moe {

inline constexpr std::string_view model_format = "sluice-moe-ctc";
inline constexpr int model_format_version = 1;

/// ModelConfig of tools/train/model.py, field for field. Frames are subsampled (40 ms) frames.
struct architecture {
  int n_mels = 80;          ///< fbank bins per input frame
  int vocab_size = 29;      ///< CTC outputs, blank at 0
  int d_model = 144;        ///< hidden width D
  int n_heads = 4;          ///< attention heads; head_dim = D / n_heads, even (RoPE pairs)
  int n_layers = 6;         ///< encoder blocks
  int conv_channels = 64;   ///< channels of both subsampling convolutions
  int n_shared = 1;         ///< shared (always-on) SwiGLU experts
  int shared_hidden = 192;  ///< hidden width of a shared expert
  int n_routed = 32;        ///< routed experts E
  int n_groups = 8;         ///< expert groups G (E % G == 0)
  int top_groups = 2;       ///< groups kept per token (level 1)
  int top_k = 4;            ///< experts kept per token, inside the kept groups (level 2)
  int expert_hidden = 48;   ///< hidden width of a routed expert
  int n_acoustic = 4;       ///< acoustic descriptors per frame (the engine computes exactly 4)
  int ctx_frames = 8;       ///< frames in the causal context mean of level 2
  int chunk_frames = 16;    ///< attention chunk; 0 = full attention
  int left_chunks = 4;      ///< past chunks a chunk sees; -1 = all
  double rope_base = 10000.0;
  int subsampling = 4;      ///< the engine implements the x4 conv subsampling only

  int head_dim() const { return d_model / n_heads; }
  int experts_per_group() const { return n_routed / n_groups; }
  /// Frequency bins after the first / second stride-2 3x3 convolution.
  int conv1_bins() const { return (n_mels - 3) / 2 + 1; }
  int conv2_bins() const { return (conv1_bins() - 3) / 2 + 1; }

  /// Checks every value and the rules between them; errc::invalid_config naming the field,
  /// its value and the rule it breaks ("model.json: architecture: d_model 30 is not divisible
  /// by n_heads 4"). `source` prefixes messages.
  result<void> validate(const std::string& source) const;
};

/// The fbank the model was trained on ("features" in model.json); the channel actors set up
/// dsp/ with these.
struct feature_settings {
  int sample_rate = 16000;
  int num_mel_bins = 80;
  double frame_length_ms = 25.0;
  double frame_shift_ms = 10.0;
  double dither = 0.0;
  double preemphasis = 0.97;
  double low_freq_hz = 20.0;
  double high_freq_hz = 0.0;
  std::string window = "povey";
  double input_scale = 32768.0;
};

/// The dsp/ fbank settings that reproduce the model's features.
config::fbank_config fbank_config_of(const feature_settings& f);

/// Default attention window of streams ("streaming" in model.json).
struct streaming_settings {
  int chunk_frames = 16;  ///< > 0: a stream emits whole chunks
  int left_chunks = 4;    ///< -1: unbounded (the cache grows with the stream)
};

struct model_manifest {
  std::string format;
  int version = 0;
  architecture arch;
  feature_settings features;
  streaming_settings streaming;
  std::string tokens_file = "tokens.txt";            ///< relative to the model directory
  std::string weights_file = "weights.safetensors";  ///< relative to the model directory
  /// "units": "chars" (the default) or "pieces"; a piece model names its SentencePiece model in
  /// "tokenizer" (relative to the model directory; empty for characters).
  bool pieces = false;
  std::string tokenizer_file;
};

/// Parses and validates model.json text; `source` (the path) prefixes messages. Errors:
/// errc::corrupt (not JSON, wrong types), errc::unsupported (another format or version, an
/// architecture field this engine does not know), errc::invalid_config (missing fields,
/// values out of range, inconsistent architecture).
result<model_manifest> parse_model_manifest(std::string_view json_text, const std::string& source);

}  // namespace sluice::moe
