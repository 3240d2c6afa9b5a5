#include "moe/model_manifest.hpp"

#include <array>
#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

namespace sluice::moe {
namespace {

using json = nlohmann::json;

// Any one size above this is a broken file, and keeping sizes this small keeps every shape
// product the loader computes far from overflow.
constexpr int max_size = 1 << 20;
constexpr int engine_acoustic_descriptors = 4;
constexpr int engine_subsampling = 4;
// Smallest fbank width the two 3x3 stride-2 convolutions leave at least one bin of.
constexpr int min_mels = 7;

struct int_field {
  const char* name;
  int architecture::*member;
};

constexpr std::array<int_field, 18> int_fields{{
    {"n_mels", &architecture::n_mels},
    {"vocab_size", &architecture::vocab_size},
    {"d_model", &architecture::d_model},
    {"n_heads", &architecture::n_heads},
    {"n_layers", &architecture::n_layers},
    {"conv_channels", &architecture::conv_channels},
    {"n_shared", &architecture::n_shared},
    {"shared_hidden", &architecture::shared_hidden},
    {"n_routed", &architecture::n_routed},
    {"n_groups", &architecture::n_groups},
    {"top_groups", &architecture::top_groups},
    {"top_k", &architecture::top_k},
    {"expert_hidden", &architecture::expert_hidden},
    {"n_acoustic", &architecture::n_acoustic},
    {"ctx_frames", &architecture::ctx_frames},
    {"chunk_frames", &architecture::chunk_frames},
    {"left_chunks", &architecture::left_chunks},
    {"subsampling", &architecture::subsampling},
}};
constexpr const char* rope_base_field = "rope_base";

// Messages name a field as `where` + key, `where` being "model.json: " or "model.json: features.";
// the section itself is `where` less its dot.
std::string section(const std::string& where) {
  return !where.empty() && where.back() == '.' ? where.substr(0, where.size() - 1) : where;
}

result<int> get_int(const json& obj, const std::string& where, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end()) return fail(errc::invalid_config, where + key + " is missing");
  if (!it->is_number_integer())
    return fail(errc::corrupt, where + key + " must be an integer, found " + it->dump());
  const auto v = it->get<int64_t>();
  if (v < -max_size || v > max_size)
    return fail(errc::invalid_config, where + key + " = " + std::to_string(v) + " is out of range");
  return static_cast<int>(v);
}

result<double> get_number(const json& obj, const std::string& where, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end()) return fail(errc::invalid_config, where + key + " is missing");
  if (!it->is_number()) return fail(errc::corrupt, where + key + " must be a number, found " + it->dump());
  return it->get<double>();
}

result<std::string> get_string(const json& obj, const std::string& where, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end()) return fail(errc::invalid_config, where + key + " is missing");
  if (!it->is_string()) return fail(errc::corrupt, where + key + " must be a string, found " + it->dump());
  return it->get<std::string>();
}

result<architecture> parse_architecture(const json& j, const std::string& where) {
  if (!j.is_object()) return fail(errc::corrupt, section(where) + " must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = it.key() == rope_base_field;
    for (const auto& f : int_fields) known |= it.key() == f.name;
    if (!known)
      return fail(errc::unsupported, where + it.key() + " is not an architecture field this engine knows");
  }
  architecture a;
  for (const auto& f : int_fields) {
    auto v = get_int(j, where, f.name);
    if (!v) return tl::unexpected(v.error());
    a.*f.member = *v;
  }
  auto base = get_number(j, where, rope_base_field);
  if (!base) return tl::unexpected(base.error());
  a.rope_base = *base;
  return a;
}

constexpr int supported_feature_rate = 16000;
constexpr double supported_input_scale = 32768.0;

result<feature_settings> parse_features(const json& j, const std::string& where) {
  if (!j.is_object()) return fail(errc::corrupt, section(where) + " must be a JSON object");
  feature_settings f;
  std::pair<const char*, double*> numbers[] = {
      {"frame_length_ms", &f.frame_length_ms}, {"frame_shift_ms", &f.frame_shift_ms}, {"dither", &f.dither},
      {"preemphasis", &f.preemphasis},         {"low_freq_hz", &f.low_freq_hz},       {"high_freq_hz", &f.high_freq_hz},
      {"input_scale", &f.input_scale}};
  for (auto& [key, dst] : numbers) {
    auto v = get_number(j, where, key);
    if (!v) return tl::unexpected(v.error());
    *dst = *v;
  }
  auto rate = get_int(j, where, "sample_rate");
  if (!rate) return tl::unexpected(rate.error());
  auto bins = get_int(j, where, "num_mel_bins");
  if (!bins) return tl::unexpected(bins.error());
  auto window = get_string(j, where, "window");
  if (!window) return tl::unexpected(window.error());
  f.sample_rate = *rate;
  f.num_mel_bins = *bins;
  f.window = *window;
  // dsp/ computes exactly one kind of fbank: say so rather than feed the model other features.
  if (f.sample_rate != supported_feature_rate || f.window != "povey" || f.dither != 0.0 ||
      f.input_scale != supported_input_scale)
    return fail(errc::unsupported, section(where) + ": the engine computes 16 kHz povey-window fbank with dither 0 "
                                                    "on samples scaled by 32768; this model asks for sample_rate " +
                                       std::to_string(f.sample_rate) + ", window \"" + f.window + "\"");
  if (!(f.frame_length_ms > 0) || !(f.frame_shift_ms > 0))
    return fail(errc::invalid_config, section(where) + ": frame_length_ms and frame_shift_ms must be positive");
  return f;
}

result<streaming_settings> parse_streaming(const json& j, const std::string& where) {
  if (!j.is_object()) return fail(errc::corrupt, section(where) + " must be a JSON object");
  auto chunk = get_int(j, where, "chunk_frames");
  if (!chunk) return tl::unexpected(chunk.error());
  auto left = get_int(j, where, "left_chunks");
  if (!left) return tl::unexpected(left.error());
  if (*chunk < 1)
    return fail(errc::invalid_config, where + "chunk_frames = " + std::to_string(*chunk) +
                                          ": a stream needs chunks of at least 1 frame");
  if (*left < -1)
    return fail(errc::invalid_config, where + "left_chunks = " + std::to_string(*left) + " must be >= -1 (-1: unbounded)");
  return streaming_settings{*chunk, *left};
}

// A file name inside the model directory: no directories, so a model cannot point outside it.
result<std::string> get_file_name(const json& j, const std::string& where, const char* key, std::string fallback) {
  if (!j.contains(key)) return fallback;
  auto v = get_string(j, where, key);
  if (!v) return v;
  if (v->empty() || v->find('/') != std::string::npos || v->find('\\') != std::string::npos || *v == "." || *v == "..")
    return fail(errc::invalid_config, where + key + " = \"" + *v + "\" must be a plain file name in the model directory");
  return v;
}

}  // namespace

result<void> architecture::validate(const std::string& source) const {
  const std::string at = source + ": architecture: ";
  auto bad = [&](const std::string& what) { return fail(errc::invalid_config, at + what); };
  const std::pair<const char*, int> positive[] = {
      {"n_mels", n_mels},   {"vocab_size", vocab_size},       {"d_model", d_model},         {"n_heads", n_heads},
      {"n_layers", n_layers}, {"conv_channels", conv_channels}, {"n_routed", n_routed},     {"n_groups", n_groups},
      {"top_groups", top_groups}, {"top_k", top_k},           {"expert_hidden", expert_hidden}, {"ctx_frames", ctx_frames}};
  for (const auto& [name, v] : positive)
    if (v < 1) return bad(std::string(name) + " = " + std::to_string(v) + " must be at least 1");
  if (n_shared < 0) return bad("n_shared = " + std::to_string(n_shared) + " must be >= 0");
  if (n_shared > 0 && shared_hidden < 1)
    return bad("shared_hidden = " + std::to_string(shared_hidden) + " must be at least 1 when n_shared > 0");
  if (n_mels < min_mels)
    return bad("n_mels = " + std::to_string(n_mels) + " is too narrow for two 3x3 stride-2 convolutions (need >= 7)");
  if (d_model % n_heads != 0)
    return bad("d_model " + std::to_string(d_model) + " is not divisible by n_heads " + std::to_string(n_heads));
  if (head_dim() % 2 != 0)
    return bad("head_dim = d_model / n_heads = " + std::to_string(head_dim()) + " must be even (rotary pairs)");
  if (n_routed % n_groups != 0)
    return bad("n_routed " + std::to_string(n_routed) + " is not divisible by n_groups " + std::to_string(n_groups));
  if (top_groups > n_groups)
    return bad("top_groups " + std::to_string(top_groups) + " is more than n_groups " + std::to_string(n_groups));
  if (top_k > top_groups * experts_per_group())
    return bad("top_k " + std::to_string(top_k) + " is more than the " + std::to_string(top_groups * experts_per_group()) +
               " experts in top_groups (" + std::to_string(top_groups) + ") groups of " +
               std::to_string(experts_per_group()));
  if (n_acoustic != engine_acoustic_descriptors)
    return bad("n_acoustic = " + std::to_string(n_acoustic) + ": the engine computes exactly 4 acoustic descriptors");
  if (subsampling != engine_subsampling)
    return bad("subsampling = " + std::to_string(subsampling) + ": the engine implements x4 conv subsampling only");
  if (chunk_frames < 0) return bad("chunk_frames = " + std::to_string(chunk_frames) + " must be >= 0 (0: full attention)");
  if (left_chunks < -1) return bad("left_chunks = " + std::to_string(left_chunks) + " must be >= -1 (-1: unbounded)");
  if (!std::isfinite(rope_base) || rope_base <= 1.0)
    return bad("rope_base = " + std::to_string(rope_base) + " must be a finite number > 1");
  return {};
}

result<model_manifest> parse_model_manifest(std::string_view json_text, const std::string& source) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    return fail(errc::corrupt, source + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) return fail(errc::corrupt, source + ": must be a JSON object");
  model_manifest m;
  auto format = get_string(j, source + ": ", "format");
  if (!format) return tl::unexpected(format.error());
  if (*format != model_format)
    return fail(errc::unsupported, source + ": format is \"" + *format + "\", this engine reads \"" +
                                       std::string(model_format) + "\"");
  auto version = get_int(j, source + ": ", "version");
  if (!version) return tl::unexpected(version.error());
  if (*version != model_format_version)
    return fail(errc::unsupported, source + ": version " + std::to_string(*version) + " of " + std::string(model_format) +
                                       "; this engine reads version " + std::to_string(model_format_version));
  m.format = *format;
  m.version = *version;

  if (!j.contains("architecture")) return fail(errc::invalid_config, source + ": \"architecture\" is missing");
  auto arch = parse_architecture(j["architecture"], source + ": architecture.");
  if (!arch) return tl::unexpected(arch.error());
  if (auto ok = arch->validate(source); !ok) return tl::unexpected(ok.error());
  m.arch = *arch;

  if (!j.contains("features")) return fail(errc::invalid_config, source + ": \"features\" is missing");
  auto features = parse_features(j["features"], source + ": features.");
  if (!features) return tl::unexpected(features.error());
  if (features->num_mel_bins != m.arch.n_mels)
    return fail(errc::invalid_config, source + ": features.num_mel_bins " + std::to_string(features->num_mel_bins) +
                                          " differs from architecture.n_mels " + std::to_string(m.arch.n_mels));
  m.features = *features;

  // Without a "streaming" section streams use the trained window (when it is chunked).
  m.streaming = {m.arch.chunk_frames, m.arch.left_chunks};
  if (j.contains("streaming")) {
    auto s = parse_streaming(j["streaming"], source + ": streaming.");
    if (!s) return tl::unexpected(s.error());
    m.streaming = *s;
  }

  if (j.contains("blank_id")) {
    auto blank = get_int(j, source + ": ", "blank_id");
    if (!blank) return tl::unexpected(blank.error());
    if (*blank != 0) return fail(errc::unsupported, source + ": blank_id " + std::to_string(*blank) + ": the engine needs 0");
  }
  auto tokens = get_file_name(j, source + ": ", "tokens", m.tokens_file);
  if (!tokens) return tl::unexpected(tokens.error());
  auto weights = get_file_name(j, source + ": ", "weights", m.weights_file);
  if (!weights) return tl::unexpected(weights.error());
  m.tokens_file = *tokens;
  m.weights_file = *weights;

  if (j.contains("units")) {
    auto units = get_string(j, source + ": ", "units");
    if (!units) return tl::unexpected(units.error());
    if (*units != "chars" && *units != "pieces")
      return fail(errc::unsupported, source + ": units \"" + *units + "\": this engine reads \"chars\" or \"pieces\"");
    m.pieces = *units == "pieces";
  }
  if (j.contains("tokenizer")) {
    auto tokenizer = get_file_name(j, source + ": ", "tokenizer", "");
    if (!tokenizer) return tl::unexpected(tokenizer.error());
    m.tokenizer_file = *tokenizer;
  }
  if (m.pieces && m.tokenizer_file.empty())
    return fail(errc::invalid_config, source + ": units \"pieces\" needs \"tokenizer\" (the SentencePiece model file)");
  if (!m.pieces && !m.tokenizer_file.empty())
    return fail(errc::invalid_config, source + ": a \"tokenizer\" is only for units \"pieces\"");
  return m;
}

config::fbank_config fbank_config_of(const feature_settings& f) {
  config::fbank_config c;
  c.num_mel_bins = f.num_mel_bins;
  c.frame_length_ms = f.frame_length_ms;
  c.frame_shift_ms = f.frame_shift_ms;
  c.low_freq_hz = f.low_freq_hz;
  c.high_freq_hz = f.high_freq_hz;
  c.preemphasis = f.preemphasis;
  return c;
}

}  // namespace sluice::moe
