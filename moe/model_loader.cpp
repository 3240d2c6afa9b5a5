// load_model: validate everything first (manifest, file structure, tensor list, vocabulary),
// then repack the PyTorch tensors into the layouts of model_weights.hpp.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "moe/acoustic_model.hpp"
#include "moe/half_float.hpp"
#include "moe/safetensors.hpp"
#include "moe/weight_manifest.hpp"

namespace sluice::moe {
namespace {

constexpr int64_t conv_taps = 9;  // 3 x 3

// check_weights() has established that every tensor exists, is F32, F16 or BF16 with the byte
// length of its shape, so widening cannot fail here.
class tensor_reader {
 public:
  explicit tensor_reader(const safetensors_file& f) : f_(f) {}

  std::vector<float> get(const std::string& name) const { return *widen_to_f32(*f_.find(name), f_.source()); }

  /// nn.Linear weight [out, in] (+ bias [out]) -> linear_weights with w [in, out].
  linear_weights linear(const std::string& prefix, bool has_bias = true) const {
    const tensor_view* t = f_.find(prefix + ".weight");
    linear_weights l;
    l.out = t->shape[0];
    l.in = t->shape[1];
    l.w = transposed(get(prefix + ".weight"), l.out, l.in);
    if (has_bias) l.b = get(prefix + ".bias");
    return l;
  }

  norm_weights norm(const std::string& prefix) const { return {get(prefix + ".weight"), get(prefix + ".bias")}; }

  /// w_gate/w_up [hidden, d], w_down [d, hidden] -> gate_up [d, 2 hidden], down [hidden, d].
  void swiglu(const std::string& prefix, int64_t d, int64_t hidden, float* gate_up, float* down) const {
    const auto gate = get(prefix + ".w_gate.weight"), up = get(prefix + ".w_up.weight");
    const auto dn = get(prefix + ".w_down.weight");
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < hidden; ++j) {
        gate_up[i * 2 * hidden + j] = gate[j * d + i];
        gate_up[i * 2 * hidden + hidden + j] = up[j * d + i];
      }
    for (int64_t j = 0; j < hidden; ++j)
      for (int64_t i = 0; i < d; ++i) down[j * d + i] = dn[i * hidden + j];
  }

  static std::vector<float> transposed(const std::vector<float>& m, int64_t rows, int64_t cols) {
    std::vector<float> t(m.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = m[r * cols + c];
    return t;
  }

 private:
  const safetensors_file& f_;
};

frontend_weights pack_frontend(const tensor_reader& r, const architecture& a) {
  frontend_weights f;
  const int64_t c = a.conv_channels, f2 = a.conv2_bins(), d = a.d_model;
  f.cmvn_mean = r.get("cmvn_mean");
  f.cmvn_istd = r.get("cmvn_istd");
  // conv1.weight [C, 1, 3, 3] -> [(kt, kf), C]
  const auto w1 = r.get("subsample.conv1.weight");
  f.conv1.resize(conv_taps * c);
  for (int64_t o = 0; o < c; ++o)
    for (int64_t tap = 0; tap < conv_taps; ++tap) f.conv1[tap * c + o] = w1[o * conv_taps + tap];
  f.conv1_bias = r.get("subsample.conv1.bias");
  // conv2.weight [C_out, C_in, 3, 3] -> [(kt, kf, C_in), C_out]
  const auto w2 = r.get("subsample.conv2.weight");
  f.conv2.resize(conv_taps * c * c);
  for (int64_t o = 0; o < c; ++o)
    for (int64_t i = 0; i < c; ++i)
      for (int64_t tap = 0; tap < conv_taps; ++tap) f.conv2[(tap * c + i) * c + o] = w2[(o * c + i) * conv_taps + tap];
  f.conv2_bias = r.get("subsample.conv2.bias");
  // out.weight [D, C * F2] with input index (c, f) -> [(f, c), D] for the channels-last conv output.
  const auto wo = r.get("subsample.out.weight");
  f.out.in = f2 * c;
  f.out.out = d;
  f.out.w.resize(f2 * c * d);
  for (int64_t o = 0; o < d; ++o)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t fr = 0; fr < f2; ++fr) f.out.w[(fr * c + ch) * d + o] = wo[o * c * f2 + ch * f2 + fr];
  f.out.b = r.get("subsample.out.bias");
  return f;
}

block_weights pack_block(const tensor_reader& r, const architecture& a, int layer) {
  const std::string p = "blocks." + std::to_string(layer) + ".";
  const int64_t d = a.d_model;
  block_weights b;
  b.ln1 = r.norm(p + "ln1");
  b.qkv = r.linear(p + "attn.qkv");
  b.proj = r.linear(p + "attn.proj");
  b.ln2 = r.norm(p + "ln2");
  auto& m = b.moe;
  for (int s = 0; s < a.n_shared; ++s) {
    swiglu_weights sw;
    sw.hidden = a.shared_hidden;
    sw.gate_up.resize(d * 2 * sw.hidden);
    sw.down.resize(sw.hidden * d);
    r.swiglu(p + "moe.shared." + std::to_string(s), d, sw.hidden, sw.gate_up.data(), sw.down.data());
    m.shared.push_back(std::move(sw));
  }
  auto& bank = m.experts;
  bank.n_experts = a.n_routed;
  bank.d = d;
  bank.hidden = a.expert_hidden;
  bank.gate_up.resize(bank.n_experts * d * 2 * bank.hidden);
  bank.down.resize(bank.n_experts * bank.hidden * d);
  for (int e = 0; e < a.n_routed; ++e)
    r.swiglu(p + "moe.experts." + std::to_string(e), d, bank.hidden, bank.gate_up.data() + e * d * 2 * bank.hidden,
             bank.down.data() + e * bank.hidden * d);
  m.router1 = r.linear(p + "moe.router1");
  m.router2 = r.linear(p + "moe.router2");
  m.group_bias = r.get(p + "moe.group_bias");
  m.expert_bias = r.get(p + "moe.expert_bias");
  return b;
}

result<std::string> read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(errc::io, "cannot open " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

result<std::shared_ptr<const acoustic_model>> load_model(const std::string& dir) {
  const std::filesystem::path root(dir);
  const auto json_path = root / "model.json";
  auto text = read_text(json_path);
  if (!text) return tl::unexpected(text.error());
  auto manifest = parse_model_manifest(*text, json_path.string());
  if (!manifest) return tl::unexpected(manifest.error());
  const architecture& arch = manifest->arch;

  const auto tokens_path = (root / manifest->tokens_file).string();
  auto tokens = token_table::load(tokens_path);
  if (!tokens) return tl::unexpected(tokens.error());
  if (manifest->pieces) {
    const auto tokenizer_path = (root / manifest->tokenizer_file).string();
    auto tokenizer = piece_tokenizer::load(tokenizer_path);
    if (!tokenizer) return tl::unexpected(tokenizer.error());
    if (auto ok = tokens->attach_tokenizer(std::move(*tokenizer), tokens_path + " and " + tokenizer_path); !ok)
      return tl::unexpected(ok.error());
  } else if (tokens->has_word_marks()) {
    return fail(errc::invalid_config, tokens_path + " lists word pieces (tokens starting with U+2581) but " +
                                          json_path.string() + " does not say units \"pieces\" with its tokenizer");
  }
  if (tokens->size() != arch.vocab_size)
    return fail(errc::invalid_config, tokens_path + " has " + std::to_string(tokens->size()) +
                                          " tokens, model.json's architecture.vocab_size is " +
                                          std::to_string(arch.vocab_size));

  auto file = safetensors_file::load((root / manifest->weights_file).string());
  if (!file) return tl::unexpected(file.error());
  if (auto ok = check_weights(*file, arch); !ok) return tl::unexpected(ok.error());

  const tensor_reader r(*file);
  model_weights w;
  w.frontend = pack_frontend(r, arch);
  for (int l = 0; l < arch.n_layers; ++l) w.blocks.push_back(pack_block(r, arch, l));
  w.ln_out = r.norm("ln_out");
  w.ctc = r.linear("ctc");
  return std::make_shared<const acoustic_model>(std::move(*manifest), std::move(*tokens), std::move(w));
}

}  // namespace sluice::moe
