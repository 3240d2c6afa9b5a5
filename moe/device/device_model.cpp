#include "moe/device/device_model.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <exception>
#include <string>
#include <thread>

#include "moe/frontend.hpp"
#include "moe/workspace.hpp"

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
  // Cache memory of ended streams, for the next ones: freeing device memory can synchronise the
  // whole device (cudaFree), which a lane must not do at every utterance's end.
  std::shared_ptr<std::vector<device_buffer>> cache_pool = std::make_shared<std::vector<device_buffer>>();
};

device_model::device_model(std::shared_ptr<const acoustic_model> model, kernels::backend& dev)
    : model_(std::move(model)), dev_(&dev), impl_(std::make_unique<impl>()) {}

device_model::~device_model() = default;

result<std::unique_ptr<device_model>> device_model::create(std::shared_ptr<const acoustic_model> model,
                                                           kernels::backend& dev, const compute_options& host) {
  if (!model) return fail(errc::invalid_argument, "device_model: no model");
  std::unique_ptr<device_model> m(new device_model(std::move(model), dev));
  m->host_compute_ = host;
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

namespace {

// Device scratch grown on demand; the first failure is kept and later requests return null.
struct scratch_allocator {
  kernels::backend& dev;
  std::string failed;

  void* get(device_buffer& b, int64_t count, std::size_t elem = sizeof(float)) {
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
  }
  float* f32(device_buffer& b, int64_t count) { return static_cast<float*>(get(b, count)); }
};

// Queues ops and keeps the first failure (the later ops of a failed call are not queued).
struct op_chain {
  kernels::backend& dev;
  status st = status::ok;
  const char* what = "";

  template <class F>
  void operator()(const char* op, F&& f) {
    if (st != status::ok) return;
    if (auto r = f(); r != status::ok) {
      st = r;
      what = op;
    }
  }
};

// Runs body(t) for t in [0, threads) (at least one), on the calling thread and threads - 1
// others; nothing may escape a thread (std::terminate), so a failure (an allocation) is kept
// and returned, the first by thread.
template <class F>
std::string on_threads(int threads, F&& body) {
  threads = std::max(threads, 1);
  std::vector<std::string> failures(static_cast<std::size_t>(threads));
  auto guarded = [&](int t) {
    try {
      body(t);
    } catch (const std::exception& e) {
      failures[static_cast<std::size_t>(t)] = e.what();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(guarded, t);
  guarded(0);
  for (auto& th : pool) th.join();
  for (auto& f : failures)
    if (!f.empty()) return f;
  return {};
}

}  // namespace

result<std::vector<float>> device_model::encode(int64_t n, std::span<const row_segment> segs,
                                                const std::vector<kernels::stream_cache>* caches,
                                                const device_forward_options& options,
                                                std::vector<forward_result>* trace) {
  const architecture& a = model_->arch();
  kernels::backend& dev = *dev_;
  impl& s = *impl_;
  const int64_t d = a.d_model, na = a.n_acoustic, vocab = a.vocab_size, k = a.top_k;
  const auto n_segs = static_cast<int64_t>(segs.size());
  std::vector<float> host_logits(static_cast<std::size_t>(n * vocab));
  if (n == 0) return host_logits;

  scratch_allocator mem{dev, {}};
  float* x = mem.f32(s.x, n * d);
  float* d_acoustic = mem.f32(s.acoustic, n * na);
  float* xn = mem.f32(s.xn, n * d);
  float* delta = mem.f32(s.delta, n * d);
  float* routed = mem.f32(s.routed, n * d);
  float* qkv = mem.f32(s.qkv, n * 3 * d);
  float* att = mem.f32(s.att, n * d);
  int64_t max_hidden = a.expert_hidden;
  for (const auto& sh : s.blocks.empty() ? std::vector<device_swiglu>{} : s.blocks[0].shared)
    max_hidden = std::max(max_hidden, sh.hidden);
  float* hidden = mem.f32(s.hidden, n * 2 * max_hidden);
  float* context = mem.f32(s.context, n * d);
  float* s1 = mem.f32(s.s1, n * a.n_groups);
  float* s2 = mem.f32(s.s2, n * a.n_routed);
  auto* groups = static_cast<int32_t*>(mem.get(s.groups, n * a.top_groups, sizeof(int32_t)));
  auto* experts = static_cast<int32_t*>(mem.get(s.experts, n * k, sizeof(int32_t)));
  float* gate_w = mem.f32(s.gate_weights, n * k);
  float* logits = mem.f32(s.logits, n * vocab);
  if (!mem.failed.empty()) return fail(errc::unavailable, dev.name() + ": " + mem.failed + ": " + dev.last_error());

  op_chain run{dev};
  auto linear = [&](const device_linear& l, const float* in, float* y) {
    run("linear", [&] { return dev.matmul({n, l.out, l.in, in, l.in, l.w, l.out, y, l.out, l.b}); });
  };
  const kernels::window_spec window{a.chunk_frames, a.left_chunks};
  const kernels::route_spec spec{a.n_groups, a.n_routed, a.top_groups, a.top_k};
  std::vector<float> trace_x;
  std::vector<int32_t> trace_e, trace_g;
  for (int layer = 0; layer < a.n_layers; ++layer) {
    const device_block& b = s.blocks[layer];
    const kernels::stream_cache* layer_caches = caches ? caches->data() + layer * n_segs : nullptr;
    run("ln1", [&] { return dev.layer_norm(x, b.ln1.gamma, b.ln1.beta, xn, n, d, layer_norm_eps); });
    linear(b.qkv, xn, qkv);
    run("attention", [&] {
      return dev.attention(qkv, n, segs.data(), n_segs, window, a.n_heads, a.head_dim(), a.rope_base, layer_caches, att);
    });
    linear(b.proj, att, delta);
    run("add", [&] { return dev.add(x, delta, n * d); });
    run("ln2", [&] { return dev.layer_norm(x, b.ln2.gamma, b.ln2.beta, xn, n, d, layer_norm_eps); });
    // Shared experts into delta, then the routers over [xn, acoustic] and [xn, context].
    for (std::size_t i = 0; i < b.shared.size(); ++i) {
      const auto& sh = b.shared[i];
      float* gate = hidden;
      float* up = hidden + n * sh.hidden;
      run("shared gate", [&] { return dev.matmul({n, sh.hidden, d, xn, d, sh.gate_up, 2 * sh.hidden, gate, sh.hidden}); });
      run("shared up", [&] {
        return dev.matmul({n, sh.hidden, d, xn, d, sh.gate_up + sh.hidden, 2 * sh.hidden, up, sh.hidden});
      });
      run("silu_mul", [&] { return dev.silu_mul(gate, up, gate, n * sh.hidden); });
      kernels::cpu::matmul_args dn{n, d, sh.hidden, gate, sh.hidden, sh.down, d, delta, d};
      dn.accumulate = i > 0;
      run("shared down", [&] { return dev.matmul(dn); });
    }
    run("context", [&] { return dev.causal_context(xn, segs.data(), n_segs, d, a.ctx_frames, layer_caches, context); });
    auto concat_linear = [&](const device_linear& l, const float* second, int64_t width, float* y) {
      run("router", [&] { return dev.matmul({n, l.out, d, xn, d, l.w, l.out, y, l.out, l.b}); });
      kernels::cpu::matmul_args tail{n, l.out, width, second, width, l.w + d * l.out, l.out, y, l.out};
      tail.accumulate = true;
      run("router", [&] { return dev.matmul(tail); });
    };
    concat_linear(b.router1, d_acoustic, na, s1);
    concat_linear(b.router2, context, d, s2);
    run("sigmoid", [&] { return dev.sigmoid(s1, n * a.n_groups); });
    run("sigmoid", [&] { return dev.sigmoid(s2, n * a.n_routed); });
    run("route", [&] { return dev.route(s1, s2, b.group_bias, b.expert_bias, n, spec, groups, experts, gate_w); });
    run("experts", [&] {
      return dev.experts(b.experts_gate_up, b.experts_down, a.n_routed, d, a.expert_hidden, xn, n, experts, gate_w, k,
                         routed);
    });
    // As model.py: the block's output is x + (shared + routed); without shared experts, x + routed.
    if (b.shared.empty()) {
      run("add", [&] { return dev.add(x, routed, n * d); });
    } else {
      run("add", [&] { return dev.add(delta, routed, n * d); });
      run("add", [&] { return dev.add(x, delta, n * d); });
    }
    if (trace && run.st == status::ok) {
      trace_x.resize(n * d);
      trace_e.resize(n * k);
      trace_g.resize(n * a.top_groups);
      run("trace", [&] { return dev.download(trace_x.data(), x, trace_x.size() * sizeof(float)); });
      run("trace", [&] { return dev.download(trace_e.data(), experts, trace_e.size() * sizeof(int32_t)); });
      run("trace", [&] { return dev.download(trace_g.data(), groups, trace_g.size() * sizeof(int32_t)); });
      for (std::size_t u = 0; u < segs.size(); ++u) {
        auto& t = (*trace)[u].layers[layer];
        const int64_t r0 = segs[u].row0, rn = segs[u].n;
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
  run("ln_out", [&] { return dev.layer_norm(x, s.ln_out.gamma, s.ln_out.beta, xn, n, d, layer_norm_eps); });
  linear(s.ctc, xn, logits);
  if (options.log_probs) run("log_softmax", [&] { return dev.log_softmax(logits, n, vocab); });
  run("download logits", [&] { return dev.download(host_logits.data(), logits, host_logits.size() * sizeof(float)); });
  if (run.st != status::ok) return device_fail(dev, run.st, run.what);
  return host_logits;
}

result<std::vector<forward_result>> device_model::forward(std::span<const fbank_view> utts,
                                                          const device_forward_options& options) {
  const architecture& a = model_->arch();
  kernels::backend& dev = *dev_;
  impl& s = *impl_;
  const int64_t m = a.n_mels, d = a.d_model, c = a.conv_channels, f1 = a.conv1_bins(), f2 = a.conv2_bins();
  const int64_t na = a.n_acoustic, vocab = a.vocab_size;

  // Host side: validate, CMVN and descriptors per utterance, rows concatenated.
  std::vector<row_segment> in_segs(utts.size()), segs1(utts.size()), segs2(utts.size());
  int64_t in_rows = 0, n = 0;
  for (std::size_t u = 0; u < utts.size(); ++u) {
    const auto& v = utts[u];
    if (v.n_frames < 0 || (v.n_frames > 0 && !v.data))
      return fail(errc::invalid_argument, "device forward: utterance " + std::to_string(u) + " has no frames array");
    if (in_rows + v.n_frames > std::numeric_limits<int32_t>::max())
      return fail(errc::limit_exceeded, "device forward: more than 2^31 frames in one batch");
    in_segs[u] = row_segment{static_cast<int32_t>(in_rows), static_cast<int32_t>(v.n_frames), 0};
    in_rows += v.n_frames;
    n += subsampled_length(v.n_frames);
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<float> frames(static_cast<std::size_t>(in_rows * m)), desc(static_cast<std::size_t>(in_rows * 4)),
      acoustic(static_cast<std::size_t>(n * na));
  std::vector<int64_t> out_row(utts.size() + 1, 0);  // each utterance's first output row
  for (std::size_t u = 0; u < utts.size(); ++u) out_row[u + 1] = out_row[u] + subsampled_length(utts[u].n_frames);
  // Utterances are independent here: thread t takes utterances t, t + T, ... (at a large batch
  // this host work would otherwise outlast the device's).
  const int threads = std::max(1, static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(host_threads_), utts.size())));
  // The input check runs in the same threaded pass (a second full pass over a large batch on one
  // core would cost as much as the front end): each utterance's first non-finite value, and the
  // first bad utterance in order is reported.
  std::vector<int64_t> bad_value(utts.size(), -1);
  const std::string failed = on_threads(threads, [&](int t) {
    const compute_ctx host_ctx(host_compute_);
    std::vector<float> powers, peaks;
    for (std::size_t u = static_cast<std::size_t>(t); u < utts.size(); u += static_cast<std::size_t>(threads)) {
      const float* data = utts[u].data;
      const int64_t values = utts[u].n_frames * m;
      for (int64_t i = 0; i < values; ++i)
        if (!std::isfinite(data[i])) {
          bad_value[u] = i;
          break;
        }
      if (bad_value[u] >= 0) continue;
      float running_min = std::numeric_limits<float>::infinity();
      const int64_t r0 = in_segs[u].row0;
      normalise_frames(host_ctx, model_->weights().frontend, m, utts[u].data, utts[u].n_frames, frames.data() + r0 * m,
                       desc.data() + r0 * n_descriptors, running_min, powers, peaks);
      average_descriptors(desc.data() + r0 * n_descriptors, out_row[u + 1] - out_row[u],
                          acoustic.data() + out_row[u] * na);
    }
  });
  if (!failed.empty()) return fail(errc::internal, "device forward: the host front end failed: " + failed);
  for (std::size_t u = 0; u < utts.size(); ++u)
    if (const int64_t i = bad_value[u]; i >= 0)
      return fail(errc::invalid_argument, "device forward: utterance " + std::to_string(u) + " frame " +
                                              std::to_string(i / m) + " bin " + std::to_string(i % m) +
                                              " is not finite");
  const auto t1 = std::chrono::steady_clock::now();

  // x4 subsampling on the device: conv1 over each utterance's frames, conv2 over conv1's rows,
  // then the linear layer over (frequency, channel) into x.
  const int64_t rows1 = [&] {
    int64_t r = 0;
    for (const auto& sg : in_segs) r += kernels::conv_out_rows(sg.n);
    return r;
  }();
  scratch_allocator mem{dev, {}};
  float* d_frames = mem.f32(s.frames, in_rows * m);
  float* d_acoustic = mem.f32(s.acoustic, n * na);
  float* d_patches = mem.f32(s.patches, std::max(rows1 * f1 * 9, n * f2 * 9 * c));
  float* d_conv1 = mem.f32(s.conv1_out, rows1 * f1 * c);
  float* d_conv2 = mem.f32(s.conv2_out, n * f2 * c);
  float* x = mem.f32(s.x, n * d);
  if (!mem.failed.empty()) return fail(errc::unavailable, dev.name() + ": " + mem.failed + ": " + dev.last_error());
  op_chain run{dev};
  run("upload frames", [&] { return dev.upload(d_frames, frames.data(), frames.size() * sizeof(float)); });
  run("upload descriptors", [&] { return dev.upload(d_acoustic, acoustic.data(), acoustic.size() * sizeof(float)); });
  run("conv1 patches", [&] {
    return dev.conv_patches(d_frames, in_segs.data(), int64_t(in_segs.size()), m, 1, d_patches, segs1.data());
  });
  run("conv1", [&] { return dev.matmul({rows1 * f1, c, 9, d_patches, 9, s.conv1, c, d_conv1, c, s.conv1_bias}); });
  run("relu", [&] { return dev.relu(d_conv1, rows1 * f1 * c); });
  run("conv2 patches", [&] {
    return dev.conv_patches(d_conv1, segs1.data(), int64_t(segs1.size()), f1, c, d_patches, segs2.data());
  });
  run("conv2", [&] { return dev.matmul({n * f2, c, 9 * c, d_patches, 9 * c, s.conv2, c, d_conv2, c, s.conv2_bias}); });
  run("relu", [&] { return dev.relu(d_conv2, n * f2 * c); });
  const auto& l = s.conv_out;
  run("conv out", [&] { return dev.matmul({n, l.out, l.in, d_conv2, l.in, l.w, l.out, x, l.out, l.b}); });
  if (run.st != status::ok) return device_fail(dev, run.st, run.what);

  std::vector<forward_result> out(utts.size());
  if (options.trace)
    for (auto& r : out) r.layers.resize(a.n_layers);
  auto logits = encode(n, segs2, nullptr, options, options.trace ? &out : nullptr);
  if (!logits) return tl::unexpected(logits.error());
  timing_ = {std::chrono::duration<double, std::milli>(t1 - t0).count(),
             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count()};
  for (std::size_t u = 0; u < utts.size(); ++u) {
    out[u].vocab = static_cast<int32_t>(vocab);
    out[u].n_frames = segs2[u].n;
    out[u].logits.assign(logits->begin() + int64_t{segs2[u].row0} * vocab,
                         logits->begin() + (int64_t{segs2[u].row0} + segs2[u].n) * vocab);
  }
  return out;
}

// ---- streaming ----

struct device_stream::caches {
  device_buffer memory;  // per layer: k [cap, d], v [cap, d], ctx [ctx_frames - 1, d]
  std::weak_ptr<std::vector<device_buffer>> pool;

  ~caches() {
    if (auto p = pool.lock(); p && memory.ptr) p->push_back(std::move(memory));
  }
};

device_stream::device_stream(stream_state state) : state_(std::move(state)), caches_(std::make_unique<caches>()) {}
device_stream::~device_stream() = default;

void device_stream::reset() {
  state_.reset();
  kv_len_ = ctx_len_ = 0;
}

result<std::unique_ptr<device_stream>> device_model::open_stream() {
  const architecture& a = model_->arch();
  if (a.chunk_frames <= 0 || a.left_chunks < 0)
    return fail(errc::unsupported, "device streams need a bounded attention window (chunk_frames > 0, left_chunks >= 0)");
  auto state = stream_state::create(*model_, attention_window{a.chunk_frames, a.left_chunks}, host_compute_);
  if (!state) return tl::unexpected(state.error());
  std::unique_ptr<device_stream> st(new device_stream(std::move(*state)));
  const int64_t d = a.d_model, cap = int64_t{a.left_chunks} * a.chunk_frames;
  const int64_t per_layer = (2 * cap + std::max(a.ctx_frames - 1, 0)) * d;
  st->caches_->pool = impl_->cache_pool;
  auto& pool = *impl_->cache_pool;
  if (!pool.empty()) {
    // Stale contents are never read: a new stream's cache lengths are 0.
    st->caches_->memory = std::move(pool.back());
    pool.pop_back();
    return st;
  }
  device_buffer& b = st->caches_->memory;
  b.dev = dev_;
  b.bytes = static_cast<std::size_t>(std::max<int64_t>(per_layer * a.n_layers, 1)) * sizeof(float);
  if (auto s = dev_->alloc(b.bytes, &b.ptr); s != status::ok) {
    b.ptr = nullptr;
    return device_fail(*dev_, s, "stream caches");
  }
  ++cache_allocations_;
  return st;
}

result<std::vector<stream_chunk>> device_model::step(std::span<device_stream* const> streams, int64_t max_chunks,
                                                     const device_forward_options& options) {
  const architecture& a = model_->arch();
  kernels::backend& dev = *dev_;
  impl& s = *impl_;
  const int64_t d = a.d_model, na = a.n_acoustic, vocab = a.vocab_size;
  const int64_t cap = int64_t{a.left_chunks} * a.chunk_frames, ctx_rows = std::max(a.ctx_frames - 1, 0);
  const int64_t per_layer = (2 * cap + ctx_rows) * d;
  if (max_chunks < 1) return fail(errc::invalid_argument, "device step: max_chunks must be >= 1");
  for (std::size_t i = 0; i < streams.size(); ++i)
    if (!streams[i] || std::find(streams.begin(), streams.begin() + i, streams[i]) != streams.begin() + i ||
        &streams[i]->state_.model() != model_.get())
      return fail(errc::invalid_argument,
                  "device step: stream " + std::to_string(i) + " is null, repeated or of another model");

  // Host: each stream's frames for this step through its front end (CMVN, descriptors, the
  // convolutions), rows concatenated.
  const auto t0 = std::chrono::steady_clock::now();
  const auto n_segs = static_cast<int64_t>(streams.size());
  std::vector<row_segment> segs(streams.size());
  std::vector<int64_t> keep(streams.size());
  int64_t n = 0;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    stream_state& st = streams[i]->state_;
    const int64_t take = st.step_frames(max_chunks);
    const bool last = st.finished() && take == st.ready_frames();
    keep[i] = last ? 0 : cap;
    segs[i] = row_segment{static_cast<int32_t>(n), static_cast<int32_t>(take), static_cast<int32_t>(st.position())};
    n += take;
  }
  std::vector<float> x_host(static_cast<std::size_t>(n * d)), acoustic(static_cast<std::size_t>(n * na));
  // Streams are independent here: thread t takes streams t, t + T, ... with its own scratch.
  const int threads = std::max(1, static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(host_threads_), streams.size())));
  if (host_ws_.size() < static_cast<std::size_t>(threads)) host_ws_.resize(static_cast<std::size_t>(threads));
  const std::string failed = on_threads(threads, [&](int t) {
    for (std::size_t i = static_cast<std::size_t>(t); i < streams.size(); i += static_cast<std::size_t>(threads)) {
      stream_state& st = streams[i]->state_;
      st.front_.take(st.ctx_, segs[i].n, x_host.data() + int64_t{segs[i].row0} * d,
                     acoustic.data() + int64_t{segs[i].row0} * na, host_ws_[static_cast<std::size_t>(t)]);
      st.position_ += segs[i].n;
    }
  });
  if (!failed.empty()) return fail(errc::internal, "device step: a stream's front end failed: " + failed);
  const auto t1 = std::chrono::steady_clock::now();
  // Each layer's caches of each stream, [n_layers][n_segs].
  std::vector<kernels::stream_cache> caches(static_cast<std::size_t>(a.n_layers * n_segs));
  for (int layer = 0; layer < a.n_layers; ++layer)
    for (int64_t i = 0; i < n_segs; ++i) {
      const device_stream& st = *streams[i];
      float* base = static_cast<float*>(st.caches_->memory.ptr) + layer * per_layer;
      caches[layer * n_segs + i] = kernels::stream_cache{base, base + cap * d, static_cast<int32_t>(st.kv_len_),
                                                         static_cast<int32_t>(cap), static_cast<int32_t>(keep[i]),
                                                         base + 2 * cap * d, static_cast<int32_t>(st.ctx_len_)};
    }
  std::vector<stream_chunk> out(streams.size());
  if (n > 0) {
    scratch_allocator mem{dev, {}};
    float* x = mem.f32(s.x, n * d);
    float* d_acoustic = mem.f32(s.acoustic, n * na);
    if (!mem.failed.empty()) return fail(errc::unavailable, dev.name() + ": " + mem.failed + ": " + dev.last_error());
    op_chain run{dev};
    run("upload rows", [&] { return dev.upload(x, x_host.data(), x_host.size() * sizeof(float)); });
    run("upload descriptors", [&] { return dev.upload(d_acoustic, acoustic.data(), acoustic.size() * sizeof(float)); });
    if (run.st != status::ok) return device_fail(dev, run.st, run.what);
    auto logits = encode(n, segs, &caches, options, nullptr);
    if (!logits) return tl::unexpected(logits.error());
    for (std::size_t i = 0; i < streams.size(); ++i)
      out[i].logits.assign(logits->begin() + int64_t{segs[i].row0} * vocab,
                           logits->begin() + (int64_t{segs[i].row0} + segs[i].n) * vocab);
  }
  const auto t2 = std::chrono::steady_clock::now();
  timing_ = {std::chrono::duration<double, std::milli>(t1 - t0).count(),
             std::chrono::duration<double, std::milli>(t2 - t1).count()};
  for (std::size_t i = 0; i < streams.size(); ++i) {
    device_stream& st = *streams[i];
    out[i].p0 = segs[i].p0;
    out[i].n_frames = segs[i].n;
    out[i].vocab = static_cast<int32_t>(vocab);
    if (segs[i].n > 0) {
      st.kv_len_ = std::min(keep[i], st.kv_len_ + segs[i].n);
      st.ctx_len_ = std::min(ctx_rows, st.ctx_len_ + segs[i].n);
    }
  }
  return out;
}

}  // namespace sluice::moe
