#include "moe/weight_manifest.hpp"

#include <set>

#include "moe/half_float.hpp"

namespace sluice::moe {
namespace {

constexpr int conv_kernel = 3;
// How many problems one message lists before it only counts the rest.
constexpr std::size_t problems_listed = 4;

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

std::vector<tensor_spec> expected_tensors(const architecture& a) {
  std::vector<tensor_spec> out;
  auto add = [&](std::string name, std::vector<int64_t> shape, std::string formula) {
    out.push_back({std::move(name), std::move(shape), std::move(formula)});
  };
  const int64_t d = a.d_model, c = a.conv_channels, k = conv_kernel;
  add("cmvn_mean", {a.n_mels}, "[n_mels]");
  add("cmvn_istd", {a.n_mels}, "[n_mels]");
  add("subsample.conv1.weight", {c, 1, k, k}, "[conv_channels, 1, 3, 3]");
  add("subsample.conv1.bias", {c}, "[conv_channels]");
  add("subsample.conv2.weight", {c, c, k, k}, "[conv_channels, conv_channels, 3, 3]");
  add("subsample.conv2.bias", {c}, "[conv_channels]");
  add("subsample.out.weight", {d, c * a.conv2_bins()},
      "[d_model, conv_channels * " + std::to_string(a.conv2_bins()) + " (n_mels after two stride-2 convs)]");
  add("subsample.out.bias", {d}, "[d_model]");
  for (int l = 0; l < a.n_layers; ++l) {
    const std::string b = "blocks." + std::to_string(l) + ".";
    for (const char* ln : {"ln1", "ln2"}) {
      add(b + ln + ".weight", {d}, "[d_model]");
      add(b + ln + ".bias", {d}, "[d_model]");
    }
    add(b + "attn.qkv.weight", {3 * d, d}, "[3 * d_model, d_model]");
    add(b + "attn.qkv.bias", {3 * d}, "[3 * d_model]");
    add(b + "attn.proj.weight", {d, d}, "[d_model, d_model]");
    add(b + "attn.proj.bias", {d}, "[d_model]");
    auto swiglu = [&](const std::string& p, int64_t hidden, const std::string& h) {
      add(p + ".w_gate.weight", {hidden, d}, "[" + h + ", d_model]");
      add(p + ".w_up.weight", {hidden, d}, "[" + h + ", d_model]");
      add(p + ".w_down.weight", {d, hidden}, "[d_model, " + h + "]");
    };
    for (int s = 0; s < a.n_shared; ++s) swiglu(b + "moe.shared." + std::to_string(s), a.shared_hidden, "shared_hidden");
    for (int e = 0; e < a.n_routed; ++e) swiglu(b + "moe.experts." + std::to_string(e), a.expert_hidden, "expert_hidden");
    add(b + "moe.router1.weight", {a.n_groups, d + a.n_acoustic}, "[n_groups, d_model + n_acoustic]");
    add(b + "moe.router1.bias", {a.n_groups}, "[n_groups]");
    add(b + "moe.router2.weight", {a.n_routed, 2 * d}, "[n_routed, 2 * d_model]");
    add(b + "moe.router2.bias", {a.n_routed}, "[n_routed]");
    add(b + "moe.group_bias", {a.n_groups}, "[n_groups]");
    add(b + "moe.expert_bias", {a.n_routed}, "[n_routed]");
  }
  add("ln_out.weight", {d}, "[d_model]");
  add("ln_out.bias", {d}, "[d_model]");
  add("ctc.weight", {a.vocab_size, d}, "[vocab_size, d_model]");
  add("ctc.bias", {a.vocab_size}, "[vocab_size]");
  return out;
}

result<void> check_weights(const safetensors_file& file, const architecture& arch) {
  std::vector<std::string> problems;
  errc code = errc::invalid_config;
  std::set<std::string> expected_names;
  for (const auto& spec : expected_tensors(arch)) {
    expected_names.insert(spec.name);
    const tensor_view* t = file.find(spec.name);
    if (!t) {
      problems.push_back("missing tensor " + spec.name + " (model.json's architecture needs " +
                         shape_string(spec.shape) + " = " + spec.formula + ")");
      continue;
    }
    if (t->shape != spec.shape)
      problems.push_back(spec.name + " has shape " + t->shape_string() + ", model.json's architecture needs " +
                         shape_string(spec.shape) + " = " + spec.formula);
    if (!is_float_weight(t->dtype)) {
      problems.push_back(spec.name + " is " + to_string(t->dtype) + "; the engine reads F32, F16 or BF16 weights");
      if (problems.size() == 1) code = errc::unsupported;
    } else if (t->nbytes != static_cast<std::size_t>(t->numel()) * dtype_size(t->dtype)) {
      // safetensors_file::parse already refuses this; the loader reads nothing it has not sized.
      problems.push_back(spec.name + " " + t->shape_string() + " " + to_string(t->dtype) + " holds " +
                         std::to_string(t->nbytes) + " bytes, not numel * " + std::to_string(dtype_size(t->dtype)));
      if (problems.size() == 1) code = errc::corrupt;
    }
  }
  for (const auto& t : file.tensors())
    if (!expected_names.count(t.name))
      problems.push_back("unexpected tensor " + t.name + " " + t.shape_string() +
                         ": model.json's architecture (n_layers " + std::to_string(arch.n_layers) + ", n_shared " +
                         std::to_string(arch.n_shared) + ", n_routed " + std::to_string(arch.n_routed) +
                         ") has no such parameter");
  if (problems.empty()) return {};
  std::string msg = file.source() + ": ";
  for (std::size_t i = 0; i < problems.size() && i < problems_listed; ++i) msg += (i ? "; " : "") + problems[i];
  if (problems.size() > problems_listed)
    msg += "; and " + std::to_string(problems.size() - problems_listed) + " more problems";
  return fail(code, msg);
}

}  // namespace sluice::moe
