#include "moe/device/device_model.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "moe/frontend.hpp"

namespace sluice::moe {
namespace {

using kernels::row_segment;
using kernels::status;

constexpr float layer_norm_eps = 1e-5f;  // torch.nn.LayerNorm's default

// Device memory owned by one object; moves, never copies.
struct device_buffer {
  kernels::backend* dev = nullptr;
  void* ptr = nullptr;
  std::size_t bytes = 0;

  device_buffer() = default;
  device_buffer(device_buffer&& o) noexcept : dev(o.dev), ptr(o.ptr), bytes(o.bytes) { o.ptr = nullptr; }
  device_buffer& operator=(device_buffer&& o) noexcept {
    std::swap(dev, o.dev);
    std::swap(ptr, o.ptr);
    std::swap(bytes, o.bytes);
    return *this;
  }
  ~device_buffer() {
    if (ptr) dev->release(ptr);
  }
};

struct device_linear {
  const float* w = nullptr;  // f32 [in, out]
  const float* b = nullptr;  // f32 [out] or null
  int64_t in = 0, out = 0;
};
struct device_norm {
  const float* gamma = nullptr;
  const float* beta = nullptr;
};
struct device_swiglu {
  const float* gate_up = nullptr;  // f32 [d, 2 hidden]
  const float* down = nullptr;     // f32 [hidden, d]
  int64_t hidden = 0;
};
struct device_block {
  device_norm ln1, ln2;
  device_linear qkv, proj, router1, router2;
  std::vector<device_swiglu> shared;
  const float* experts_gate_up = nullptr;  // f32 [E, d, 2 hidden]
  const float* experts_down = nullptr;     // f32 [E, hidden, d]
  const float* group_bias = nullptr;
  const float* expert_bias = nullptr;
};

tl::unexpected<error> device_fail(kernels::backend& dev, status s, const char* what) {
  const errc code = s == status::invalid_argument                            ? errc::invalid_argument
                    : s == status::unavailable || s == status::out_of_memory ? errc::unavailable
                                                                             : errc::internal;
  return fail(code, dev.name() + ": " + what + ": " + kernels::to_string(s) +
                        (dev.last_error().empty() ? "" : " (" + dev.last_error() + ")"));
}

}  // namespace

struct device_model::impl {
  std::vector<device_buffer> weights;
  const float* conv1 = nullptr;  // f32 [9, C]
  const float* conv1_bias = nullptr;
  const float* conv2 = nullptr;  // f32 [9 C, C]
  const float* conv2_bias = nullptr;
  device_linear conv_out;
  std::vector<device_block> blocks;
  device_norm ln_out;
  device_linear ctc;

  // Per-call activations, grown to the largest call (never shrunk).
  device_buffer frames, acoustic, patches, conv1_out, conv2_out, x, xn, delta, routed, qkv, att, hidden, context, s1, s2,
      groups, experts, gate_weights, logits;
};

device_model::device_model(std::shared_ptr<const acoustic_model> model, kernels::backend& dev)
    : model_(std::move(model)), dev_(&dev), impl_(std::make_unique<impl>()) {}

device_model::~device_model() = default;

result<std::unique_ptr<device_model>> device_model::create(std::shared_ptr<const acoustic_model> model,
                                                           kernels::backend& dev) {
  if (!model) return fail(errc::invalid_argument, "device_model: no model");
  std::unique_ptr<device_model> m(new device_model(std::move(model), dev));
  impl& s = *m->impl_;
  std::string failed;
  auto put = [&](const std::vector<float>& v) -> const float* {
    if (v.empty() || !failed.empty()) return nullptr;
    device_buffer b;
    b.dev = &dev;
    b.bytes = v.size() * sizeof(float);
    if (auto st = dev.alloc(b.bytes, &b.ptr); st != status::ok) {
      failed = "weights: alloc";
      return nullptr;
    }
    if (auto st = dev.upload(b.ptr, v.data(), b.bytes); st != status::ok) failed = "weights: upload";
    m->weight_bytes_ += b.bytes;
    s.weights.push_back(std::move(b));
    return static_cast<const float*>(s.weights.back().ptr);
  };
  auto linear = [&](const linear_weights& l) { return device_linear{put(l.w), put(l.b), l.in, l.out}; };
  auto norm = [&](const norm_weights& n) { return device_norm{put(n.gamma), put(n.beta)}; };

  const model_weights& w = m->model_->weights();
  s.conv1 = put(w.frontend.conv1);
  s.conv1_bias = put(w.frontend.conv1_bias);
  s.conv2 = put(w.frontend.conv2);
  s.conv2_bias = put(w.frontend.conv2_bias);
  s.conv_out = linear(w.frontend.out);
  for (const auto& b : w.blocks) {
    device_block d;
    d.ln1 = norm(b.ln1);
    d.ln2 = norm(b.ln2);
    d.qkv = linear(b.qkv);
    d.proj = linear(b.proj);
    d.router1 = linear(b.moe.router1);
    d.router2 = linear(b.moe.router2);
    for (const auto& sh : b.moe.shared) d.shared.push_back({put(sh.gate_up), put(sh.down), sh.hidden});
    d.experts_gate_up = put(b.moe.experts.gate_up);
    d.experts_down = put(b.moe.experts.down);
    d.group_bias = put(b.moe.group_bias);
    d.expert_bias = put(b.moe.expert_bias);
    s.blocks.push_back(std::move(d));
  }
  s.ln_out = norm(w.ln_out);
  s.ctc = linear(w.ctc);
  if (!failed.empty()) return fail(errc::unavailable, dev.name() + ": " + failed + ": " + dev.last_error());
  if (auto st = dev.synchronize(); st != status::ok) return device_fail(dev, st, "weights: synchronize");
  return m;
}

result<std::vector<forward_result>> device_model::forward(std::span<const fbank_view> utts,
                                                          const device_forward_options& options) {
  const architecture& a = model_->arch();
  kernels::backend& dev = *dev_;
  impl& s = *impl_;
  const int64_t m = a.n_mels, d = a.d_model, c = a.conv_channels, f1 = a.conv1_bins(), f2 = a.conv2_bins();
  const int64_t na = a.n_acoustic, vocab = a.vocab_size, k = a.top_k;

  // Host side: validate, CMVN and descriptors per utterance, rows concatenated.
  std::vector<row_segment> in_segs(utts.size()), segs1(utts.size()), segs2(utts.size());
  int64_t in_rows = 0, n = 0;
  for (std::size_t u = 0; u < utts.size(); ++u) {
    const auto& v = utts[u];
    if (v.n_frames < 0 || (v.n_frames > 0 && !v.data))
      return fail(errc::invalid_argument, "device forward: utterance " + std::to_string(u) + " has no frames array");
    for (int64_t i = 0; i < v.n_frames * m; ++i)
      if (!std::isfinite(v.data[i]))
        return fail(errc::invalid_argument, "device forward: utterance " + std::to_string(u) + " frame " +
                                                std::to_string(i / m) + " bin " + std::to_string(i % m) +
                                                " is not finite");
    if (in_rows + v.n_frames > std::numeric_limits<int32_t>::max())
      return fail(errc::limit_exceeded, "device forward: more than 2^31 frames in one batch");
    in_segs[u] = row_segment{static_cast<int32_t>(in_rows), static_cast<int32_t>(v.n_frames), 0};
    in_rows += v.n_frames;
    n += subsampled_length(v.n_frames);
  }
  std::vector<float> frames(static_cast<std::size_t>(in_rows * m)), desc(static_cast<std::size_t>(in_rows * 4)),
      acoustic(static_cast<std::size_t>(n * na)), powers, peaks;
  {
    const compute_ctx host_ctx(compute_options{});
    int64_t out_row = 0;
    for (std::size_t u = 0; u < utts.size(); ++u) {
      float running_min = std::numeric_limits<float>::infinity();
      const int64_t r0 = in_segs[u].row0;
      normalise_frames(host_ctx, model_->weights().frontend, m, utts[u].data, utts[u].n_frames, frames.data() + r0 * m,
                       desc.data() + r0 * n_descriptors, running_min, powers, peaks);
      const int64_t n_out = subsampled_length(utts[u].n_frames);
      average_descriptors(desc.data() + r0 * n_descriptors, n_out, acoustic.data() + out_row * na);
      out_row += n_out;
    }
  }

  // Device scratch, grown to this call.
  std::string failed;
  auto buf = [&](device_buffer& b, int64_t count, std::size_t elem = sizeof(float)) -> void* {
    const std::size_t bytes = static_cast<std::size_t>(std::max<int64_t>(count, 1)) * elem;
    if (b.bytes < bytes && failed.empty()) {
      device_buffer fresh;
      fresh.dev = &dev;
      fresh.bytes = bytes;
      if (dev.alloc(bytes, &fresh.ptr) != status::ok) {
        failed = "activations: alloc of " + std::to_string(bytes) + " bytes";
        return nullptr;
      }
      b = std::move(fresh);
    }
    return b.ptr;
  };
  const int64_t rows1 = [&] {
    int64_t r = 0;
    for (const auto& sg : in_segs) r += kernels::conv_out_rows(sg.n);
    return r;
  }();
  auto* d_frames = static_cast<float*>(buf(s.frames, in_rows * m));
  auto* d_acoustic = static_cast<float*>(buf(s.acoustic, n * na));
  auto* d_patches = static_cast<float*>(buf(s.patches, std::max(rows1 * f1 * 9, n * f2 * 9 * c)));
  auto* d_conv1 = static_cast<float*>(buf(s.conv1_out, rows1 * f1 * c));
  auto* d_conv2 = static_cast<float*>(buf(s.conv2_out, n * f2 * c));
  auto* x = static_cast<float*>(buf(s.x, n * d));
  auto* xn = static_cast<float*>(buf(s.xn, n * d));
  auto* delta = static_cast<float*>(buf(s.delta, n * d));
  auto* routed = static_cast<float*>(buf(s.routed, n * d));
  auto* qkv = static_cast<float*>(buf(s.qkv, n * 3 * d));
  auto* att = static_cast<float*>(buf(s.att, n * d));
  int64_t max_hidden = a.expert_hidden;
  for (const auto& sh : s.blocks.empty() ? std::vector<device_swiglu>{} : s.blocks[0].shared)
    max_hidden = std::max(max_hidden, sh.hidden);
  auto* hidden = static_cast<float*>(buf(s.hidden, n * 2 * max_hidden));
  auto* context = static_cast<float*>(buf(s.context, n * d));
  auto* s1 = static_cast<float*>(buf(s.s1, n * a.n_groups));
  auto* s2 = static_cast<float*>(buf(s.s2, n * a.n_routed));
  auto* groups = static_cast<int32_t*>(buf(s.groups, n * a.top_groups, sizeof(int32_t)));
  auto* experts = static_cast<int32_t*>(buf(s.experts, n * k, sizeof(int32_t)));
  auto* gate_w = static_cast<float*>(buf(s.gate_weights, n * k));
  auto* logits = static_cast<float*>(buf(s.logits, n * vocab));
  if (!failed.empty()) return fail(errc::unavailable, dev.name() + ": " + failed + ": " + dev.last_error());

  std::vector<forward_result> out(utts.size());
  status st = status::ok;
  const char* what = "";
  auto run = [&](status r, const char* op) {
    if (st == status::ok && r != status::ok) {
      st = r;
      what = op;
    }
  };
  auto linear = [&](const device_linear& l, const float* in, int64_t rows, float* y, bool accumulate = false) {
    kernels::cpu::matmul_args g{rows, l.out, l.in, in, l.in, l.w, l.out, y, l.out, l.b};
    g.accumulate = accumulate;
    run(dev.matmul(g), "linear");
  };
  run(dev.upload(d_frames, frames.data(), frames.size() * sizeof(float)), "upload frames");
  run(dev.upload(d_acoustic, acoustic.data(), acoustic.size() * sizeof(float)), "upload descriptors");

  // x4 subsampling: conv1 over each utterance's frames, conv2 over conv1's rows, then the
  // linear layer over (frequency, channel).
  run(dev.conv_patches(d_frames, in_segs.data(), int64_t(in_segs.size()), m, 1, d_patches, segs1.data()), "conv1 patches");
  run(dev.matmul({rows1 * f1, c, 9, d_patches, 9, s.conv1, c, d_conv1, c, s.conv1_bias}), "conv1");
  run(dev.relu(d_conv1, rows1 * f1 * c), "relu");
  run(dev.conv_patches(d_conv1, segs1.data(), int64_t(segs1.size()), f1, c, d_patches, segs2.data()), "conv2 patches");
  run(dev.matmul({n * f2, c, 9 * c, d_patches, 9 * c, s.conv2, c, d_conv2, c, s.conv2_bias}), "conv2");
  run(dev.relu(d_conv2, n * f2 * c), "relu");
  linear(s.conv_out, d_conv2, n, x);

  const kernels::window_spec window{a.chunk_frames, a.left_chunks};
  const kernels::route_spec spec{a.n_groups, a.n_routed, a.top_groups, a.top_k};
  if (options.trace)
    for (auto& r : out) r.layers.resize(a.n_layers);
  std::vector<float> trace_x;
  std::vector<int32_t> trace_e, trace_g;
  for (int layer = 0; layer < a.n_layers && n > 0; ++layer) {
    const device_block& b = s.blocks[layer];
    run(dev.layer_norm(x, b.ln1.gamma, b.ln1.beta, xn, n, d, layer_norm_eps), "ln1");
    linear(b.qkv, xn, n, qkv);
    run(dev.attention(qkv, n, segs2.data(), int64_t(segs2.size()), window, a.n_heads, a.head_dim(), a.rope_base, att),
        "attention");
    linear(b.proj, att, n, delta);
    run(dev.add(x, delta, n * d), "add");
    run(dev.layer_norm(x, b.ln2.gamma, b.ln2.beta, xn, n, d, layer_norm_eps), "ln2");
    // Shared experts into delta, then the routers over [xn, acoustic] and [xn, context].
    for (std::size_t i = 0; i < b.shared.size(); ++i) {
      const auto& sh = b.shared[i];
      float* gate = hidden;
      float* up = hidden + n * sh.hidden;
      run(dev.matmul({n, sh.hidden, d, xn, d, sh.gate_up, 2 * sh.hidden, gate, sh.hidden}), "shared gate");
      run(dev.matmul({n, sh.hidden, d, xn, d, sh.gate_up + sh.hidden, 2 * sh.hidden, up, sh.hidden}), "shared up");
      run(dev.silu_mul(gate, up, gate, n * sh.hidden), "silu_mul");
      kernels::cpu::matmul_args dn{n, d, sh.hidden, gate, sh.hidden, sh.down, d, delta, d};
      dn.accumulate = i > 0;
      run(dev.matmul(dn), "shared down");
    }
    run(dev.causal_context(xn, segs2.data(), int64_t(segs2.size()), d, a.ctx_frames, context), "context");
    auto concat_linear = [&](const device_linear& l, const float* second, int64_t width, float* y) {
      run(dev.matmul({n, l.out, d, xn, d, l.w, l.out, y, l.out, l.b}), "router");
      kernels::cpu::matmul_args tail{n, l.out, width, second, width, l.w + d * l.out, l.out, y, l.out};
      tail.accumulate = true;
      run(dev.matmul(tail), "router");
    };
    concat_linear(b.router1, d_acoustic, na, s1);
    concat_linear(b.router2, context, d, s2);
    run(dev.sigmoid(s1, n * a.n_groups), "sigmoid");
    run(dev.sigmoid(s2, n * a.n_routed), "sigmoid");
    run(dev.route(s1, s2, b.group_bias, b.expert_bias, n, spec, groups, experts, gate_w), "route");
    run(dev.experts(b.experts_gate_up, b.experts_down, a.n_routed, d, a.expert_hidden, xn, n, experts, gate_w, k, routed),
        "experts");
    // As model.py: the block's output is x + (shared + routed).
    run(dev.add(delta, routed, n * d), "add");
    run(dev.add(x, delta, n * d), "add");
    if (options.trace && st == status::ok) {
      trace_x.resize(n * d);
      trace_e.resize(n * k);
      trace_g.resize(n * a.top_groups);
      run(dev.download(trace_x.data(), x, trace_x.size() * sizeof(float)), "trace");
      run(dev.download(trace_e.data(), experts, trace_e.size() * sizeof(int32_t)), "trace");
      run(dev.download(trace_g.data(), groups, trace_g.size() * sizeof(int32_t)), "trace");
      for (std::size_t u = 0; u < utts.size(); ++u) {
        auto& t = out[u].layers[layer];
        const int64_t r0 = segs2[u].row0, rn = segs2[u].n;
        t.out.assign(trace_x.begin() + r0 * d, trace_x.begin() + (r0 + rn) * d);
        t.experts.assign(trace_e.begin() + r0 * k, trace_e.begin() + (r0 + rn) * k);
        t.groups.assign(trace_g.begin() + r0 * a.top_groups, trace_g.begin() + (r0 + rn) * a.top_groups);
        for (int64_t r = 0; r < rn; ++r) {
          std::sort(t.experts.begin() + r * k, t.experts.begin() + (r + 1) * k);
          std::sort(t.groups.begin() + r * a.top_groups, t.groups.begin() + (r + 1) * a.top_groups);
        }
      }
    }
  }
  std::vector<float> host_logits(static_cast<std::size_t>(n * vocab));
  if (n > 0) {
    run(dev.layer_norm(x, s.ln_out.gamma, s.ln_out.beta, xn, n, d, layer_norm_eps), "ln_out");
    linear(s.ctc, xn, n, logits);
    if (options.log_probs) run(dev.log_softmax(logits, n, vocab), "log_softmax");
    run(dev.download(host_logits.data(), logits, host_logits.size() * sizeof(float)), "download logits");
  }
  if (st != status::ok) return device_fail(dev, st, what);
  for (std::size_t u = 0; u < utts.size(); ++u) {
    out[u].vocab = static_cast<int32_t>(vocab);
    out[u].n_frames = segs2[u].n;
    out[u].logits.assign(host_logits.begin() + int64_t{segs2[u].row0} * vocab,
                         host_logits.begin() + (int64_t{segs2[u].row0} + segs2[u].n) * vocab);
  }
  return out;
}

}  // namespace sluice::moe
