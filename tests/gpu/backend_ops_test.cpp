// Every op of kernels::backend compared between two backends on the same inputs, each case with
// its own tolerance (as ggml's test-backend-ops): the CUDA backend against the CPU one when a
// GPU can be used, and, always, the scalar CPU backend against the vectorised one (which runs
// the same table of cases here, so the cases themselves are exercised on every machine).
// Without a usable GPU the CUDA cases print "SKIPPED: no usable GPU" and ctest reports them as
// skipped (SKIP_REGULAR_EXPRESSION), never as passed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu/fp8.hpp"
#include "kernels/cuda_backend.hpp"
#include "moe/acoustic_model.hpp"
#include "moe/device/cpu_backend.hpp"
#include "moe/device/device_model.hpp"
#include "moe/safetensors.hpp"
#include "tests/common/random_vec.hpp"
#include "tests/common/word_errors.hpp"

using namespace sluice;
using kernels::backend;
using kernels::row_segment;
using kernels::status;

namespace {

using sluice::test::random_vec;

// Normalised mean squared error, as test-backend-ops compares backends.
double nmse(const std::vector<float>& ref, const std::vector<float>& got) {
  if (ref.size() != got.size()) return INFINITY;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (double(ref[i]) - got[i]) * (double(ref[i]) - got[i]);
    den += double(ref[i]) * ref[i];
  }
  return num / (den > 0 ? den : 1);
}

// Device buffers of one case, freed with it.
class session {
 public:
  explicit session(backend& b) : b_(b) {}
  ~session() {
    for (void* p : owned_) b_.release(p);
  }
  template <class T>
  T* put(const std::vector<T>& v) {
    T* p = make<T>(v.size());
    REQUIRE(b_.upload(p, v.data(), v.size() * sizeof(T)) == status::ok);
    return p;
  }
  template <class T>
  T* make(std::size_t n) {
    void* p = nullptr;
    REQUIRE_MESSAGE(b_.alloc(std::max<std::size_t>(n, 1) * sizeof(T), &p) == status::ok, b_.last_error());
    owned_.push_back(p);
    return static_cast<T*>(p);
  }
  template <class T>
  std::vector<float> get(const T* p, std::size_t n) {
    std::vector<T> host(n);
    REQUIRE_MESSAGE(b_.download(host.data(), p, n * sizeof(T)) == status::ok, b_.last_error());
    return std::vector<float>(host.begin(), host.end());
  }
  void ok(status s) { REQUIRE_MESSAGE(s == status::ok, b_.last_error()); }
  backend& dev() { return b_; }

 private:
  backend& b_;
  std::vector<void*> owned_;
};

struct op_case {
  std::string name;
  double tolerance;  // largest NMSE accepted; 0: integers (or codes) must be identical
  std::function<std::vector<float>(session&)> run;
};

// The model's shapes (models/default): d 144, 4 heads of 36, 32 experts in 8 groups.
constexpr int64_t d_model = 144, heads = 4, head_dim = 36, hidden = 48, n_experts = 32;

// 100 rows: more than a 16/4 window's 80 keys; a segment starting at position 16 (as a stream's
// later chunk would).
std::vector<row_segment> three_segments() { return {{0, 100, 0}, {100, 7, 0}, {107, 23, 16}}; }

std::vector<op_case> op_cases() {
  std::vector<op_case> c;
  c.push_back({"matmul with bias, accumulate and strides", 1e-10, [](session& s) {
                 const int64_t m = 37, n = 29, k = 53;
                 auto a = s.put(random_vec(m * (k + 3), 1)), b = s.put(random_vec(k * (n + 2), 2));
                 auto bias = s.put(random_vec(n, 3));
                 auto out = s.put(random_vec(m * (n + 1), 4));
                 kernels::cpu::matmul_args g{m, n, k, a, k + 3, b, n + 2, out, n + 1, bias};
                 g.accumulate = true;
                 s.ok(s.dev().matmul(g));
                 return s.get(out, m * (n + 1));
               }});
  // bf16 math (A and B rounded to bf16 to nearest even, f32 sums) on both sides, so they differ
  // by the order of f32 sums only: each element by <= 2 (k + 3) 2^-24 of sum |a_i b_i|, an NMSE
  // <= (2 * 56 * 2^-24)^2 * k (E|ab|)^2 / E[(ab)^2] = 4.5e-11 * 53 * (2/pi)^2 = 9.6e-10 for these
  // normal inputs. A side that kept f32 products, or rounded otherwise, is off by about 2^-9 of
  // each input (NMSE ~1e-6) and fails.
  c.push_back({"matmul in bf16 math", 1e-9, [](session& s) {
                 const int64_t m = 37, n = 29, k = 53;
                 auto a = s.put(random_vec(m * (k + 3), 11)), b = s.put(random_vec(k * (n + 2), 12));
                 auto bias = s.put(random_vec(n, 13));
                 auto out = s.put(random_vec(m * (n + 1), 14));
                 kernels::cpu::matmul_args g{m, n, k, a, k + 3, b, n + 2, out, n + 1, bias};
                 g.accumulate = true;
                 s.ok(s.dev().set_math(kernels::math_mode::bf16));
                 s.ok(s.dev().matmul(g));
                 s.ok(s.dev().set_math(kernels::math_mode::f32));
                 return s.get(out, m * (n + 1));
               }});
  c.push_back({"layer_norm", 1e-10, [](session& s) {
                 auto x = s.put(random_vec(50 * d_model, 5, 3.0f));
                 auto gamma = s.put(random_vec(d_model, 6)), beta = s.put(random_vec(d_model, 7));
                 auto out = s.make<float>(50 * d_model);
                 s.ok(s.dev().layer_norm(x, gamma, beta, out, 50, d_model, 1e-5f));
                 return s.get(out, 50 * d_model);
               }});
  c.push_back({"add, relu, sigmoid, silu_mul", 1e-10, [](session& s) {
                 const int64_t n = 1000;
                 auto a = s.put(random_vec(n, 8, 4.0f)), b = s.put(random_vec(n, 9, 4.0f));
                 auto c2 = s.put(random_vec(n, 10, 4.0f)), out = s.make<float>(n);
                 s.ok(s.dev().add(a, b, n));
                 s.ok(s.dev().silu_mul(a, c2, out, n));
                 s.ok(s.dev().relu(a, n));
                 s.ok(s.dev().sigmoid(b, n));
                 auto r = s.get(out, n), ra = s.get(a, n), rb = s.get(b, n);
                 r.insert(r.end(), ra.begin(), ra.end());
                 r.insert(r.end(), rb.begin(), rb.end());
                 return r;
               }});
  c.push_back({"log_softmax", 1e-12, [](session& s) {
                 auto x = s.put(random_vec(40 * 29, 11, 5.0f));
                 s.ok(s.dev().log_softmax(x, 40, 29));
                 return s.get(x, 40 * 29);
               }});
  for (auto w : {kernels::window_spec{16, 4}, kernels::window_spec{16, -1}, kernels::window_spec{0, -1}}) {
    // 300 rows in the full-attention case: more keys than one tile of the CUDA kernel.
    const bool full = w.chunk_frames == 0;
    c.push_back({"attention, window " + std::to_string(w.chunk_frames) + "/" + std::to_string(w.left_chunks), 1e-9,
                 [w, full](session& s) {
                   auto segs = full ? std::vector<row_segment>{{0, 300, 0}, {300, 20, 5}} : three_segments();
                   const int64_t rows = segs.back().row0 + segs.back().n;
                   auto qkv = s.put(random_vec(rows * 3 * d_model, 12));
                   auto out = s.make<float>(rows * d_model);
                   s.ok(s.dev().attention(qkv, rows, segs.data(), int64_t(segs.size()), w, heads, head_dim, 10000.0, nullptr, out));
                   auto r = s.get(out, rows * d_model), rotated = s.get(qkv, rows * 3 * d_model);
                   r.insert(r.end(), rotated.begin(), rotated.end());
                   return r;
                 }});
  }
  c.push_back({"attention and context, segments out of order with an empty one", 1e-9, [](session& s) {
                 std::vector<row_segment> segs{{107, 23, 16}, {100, 0, 0}, {0, 100, 0}, {100, 7, 3}};
                 const int64_t rows = 130;
                 auto qkv = s.put(random_vec(rows * 3 * d_model, 25));
                 auto out = s.make<float>(rows * d_model), ctx = s.make<float>(rows * 3 * d_model);
                 s.ok(s.dev().attention(qkv, rows, segs.data(), 4, {16, 4}, heads, head_dim, 10000.0, nullptr, out));
                 s.ok(s.dev().causal_context(qkv, segs.data(), 4, 3 * d_model, 8, nullptr, ctx));
                 auto r = s.get(out, rows * d_model), c2 = s.get(ctx, rows * 3 * d_model);
                 r.insert(r.end(), c2.begin(), c2.end());
                 return r;
               }});
  c.push_back({"streaming attention and context: two steps through the caches", 1e-9, [](session& s) {
                 // Stream A has 30 frames cached (and 7 context rows), stream B none; each takes
                 // 20 rows a step; the caches keep 64 frames (4 chunks of 16).
                 constexpr int32_t cap = 64, ctx = 8;
                 const int64_t d = d_model;
                 std::vector<kernels::stream_cache> caches(2);
                 for (int i = 0; i < 2; ++i) {
                   caches[i].k = s.put(random_vec(cap * d, 30 + i));
                   caches[i].v = s.put(random_vec(cap * d, 32 + i));
                   caches[i].ctx = s.put(random_vec((ctx - 1) * d, 34 + i));
                   caches[i].kv_cap = cap;
                   caches[i].kv_keep = cap;
                 }
                 caches[0].kv_len = 30;
                 caches[0].ctx_len = ctx - 1;
                 std::vector<float> r;
                 int32_t pos[2] = {30, 0};
                 for (int step = 0; step < 2; ++step) {
                   // B first in the batch: rows need not follow the streams' order.
                   std::vector<row_segment> segs{{20, 20, pos[0]}, {0, 20, pos[1]}};
                   auto qkv = s.put(random_vec(40 * 3 * d, 40 + step));
                   auto y = s.put(random_vec(40 * d, 42 + step));
                   auto out = s.make<float>(40 * d), cx = s.make<float>(40 * d);
                   s.ok(s.dev().attention(qkv, 40, segs.data(), 2, {16, 4}, heads, head_dim, 10000.0, caches.data(), out));
                   s.ok(s.dev().causal_context(y, segs.data(), 2, d, ctx, caches.data(), cx));
                   for (auto v : {s.get(out, 40 * d), s.get(cx, 40 * d)}) r.insert(r.end(), v.begin(), v.end());
                   for (int i = 0; i < 2; ++i) {
                     caches[i].kv_len = std::min(cap, caches[i].kv_len + 20);
                     caches[i].ctx_len = std::min(ctx - 1, caches[i].ctx_len + 20);
                     pos[i] += 20;
                   }
                 }
                 for (const auto& c : caches)
                   for (auto v : {s.get(c.k, c.kv_len * d), s.get(c.v, c.kv_len * d), s.get(c.ctx, c.ctx_len * d)})
                     r.insert(r.end(), v.begin(), v.end());
                 return r;
               }});
  c.push_back({"causal_context", 1e-12, [](session& s) {
                 auto segs = three_segments();
                 const int64_t rows = segs.back().row0 + segs.back().n;
                 auto y = s.put(random_vec(rows * d_model, 13)), out = s.make<float>(rows * d_model);
                 s.ok(s.dev().causal_context(y, segs.data(), int64_t(segs.size()), d_model, 8, nullptr, out));
                 return s.get(out, rows * d_model);
               }});
  auto route = [](session& s, bool weights_only) {
    const int64_t n = 200;
    const kernels::route_spec spec{8, int32_t(n_experts), 2, 4};
    auto s1 = random_vec(n * 8, 14), s2 = random_vec(n * n_experts, 15);
    for (auto* v : {&s1, &s2})
      for (auto& x : *v) x = 1.0f / (1.0f + std::exp(-x));
    auto d1 = s.put(s1), d2 = s.put(s2);
    auto gb = s.put(random_vec(8, 16, 0.1f)), eb = s.put(random_vec(n_experts, 17, 0.1f));
    auto groups = s.make<int32_t>(n * 2);
    auto experts = s.make<int32_t>(n * 4);
    auto wt = s.make<float>(n * 4);
    s.ok(s.dev().route(d1, d2, gb, eb, n, spec, groups, experts, wt));
    if (weights_only) return s.get(wt, n * 4);
    auto r = s.get(groups, n * 2), e = s.get(experts, n * 4);
    r.insert(r.end(), e.begin(), e.end());
    return r;
  };
  c.push_back({"route: groups and experts", 0, [route](session& s) { return route(s, false); }});
  c.push_back({"route: gate weights", 1e-12, [route](session& s) { return route(s, true); }});
  c.push_back({"experts (grouped SwiGLU, ascending-expert sum)", 1e-10, [](session& s) {
                 const int64_t n = 150, k = 4;
                 std::mt19937 rng(18);
                 std::vector<int32_t> chosen;
                 for (int64_t t = 0; t < n; ++t) {
                   std::vector<int32_t> all(n_experts);
                   for (int32_t e = 0; e < n_experts; ++e) all[e] = e;
                   std::shuffle(all.begin(), all.end(), rng);
                   // Skewed: the first rows crowd into experts 0..5 (more than a tile of rows).
                   if (t < 60)
                     for (int j = 0; j < k; ++j) all[j] = int32_t((t + j) % 6);
                   chosen.insert(chosen.end(), all.begin(), all.begin() + k);
                 }
                 auto gu = s.put(random_vec(n_experts * d_model * 2 * hidden, 19, 0.1f));
                 auto dn = s.put(random_vec(n_experts * hidden * d_model, 20, 0.1f));
                 auto x = s.put(random_vec(n * d_model, 21));
                 auto e = s.put(chosen);
                 auto w = s.put(random_vec(n * k, 22));
                 auto out = s.make<float>(n * d_model);
                 s.ok(s.dev().experts(gu, dn, int32_t(n_experts), d_model, hidden, x, n, e, w, int32_t(k), out));
                 return s.get(out, n * d_model);
               }});
  for (int64_t channels : {1, 32}) {
    c.push_back({"conv_patches, " + std::to_string(channels) + " channel(s)", 0, [channels](session& s) {
                   const int64_t bins = channels == 1 ? 80 : 39;
                   std::vector<row_segment> segs{{0, 30, 0}, {30, 2, 0}, {32, 11, 0}};
                   auto in = s.put(random_vec(43 * bins * channels, 23));
                   std::vector<row_segment> out_segs(3);
                   const int64_t rows = kernels::conv_out_rows(30) + kernels::conv_out_rows(11);
                   const int64_t size = rows * ((bins - 3) / 2 + 1) * 9 * channels;
                   auto p = s.make<float>(size);
                   s.ok(s.dev().conv_patches(in, segs.data(), 3, bins, channels, p, out_segs.data()));
                   auto r = s.get(p, size);
                   for (const auto& o : out_segs) r.insert(r.end(), {float(o.row0), float(o.n)});
                   return r;
                 }});
  }
  c.push_back({"fp8 E4M3 codes and scales", 0, [](session& s) {
                 const int64_t n = 1000;
                 auto v = random_vec(n, 24, 3.0f);
                 std::fill(v.begin() + 256, v.begin() + 384, 0.0f);  // a group of zeros: scale 1
                 auto x = s.put(v);
                 auto q = s.make<uint8_t>(n);
                 auto sc = s.make<float>(kernels::cpu::fp8_scale_count(n));
                 s.ok(s.dev().fp8_encode(x, n, q, sc));
                 auto back = s.make<float>(n);
                 s.ok(s.dev().fp8_decode(q, sc, n, back));
                 auto r = s.get(q, n), rs = s.get(sc, kernels::cpu::fp8_scale_count(n)), rb = s.get(back, n);
                 r.insert(r.end(), rs.begin(), rs.end());
                 r.insert(r.end(), rb.begin(), rb.end());
                 return r;
               }});
  return c;
}

// Runs every case on both backends; returns the number of failing cases.
int compare(backend& ref, backend& got) {
  int failed = 0;
  for (const auto& oc : op_cases()) {
    CAPTURE(oc.name);
    std::vector<float> a, b;
    {
      session s(ref);
      a = oc.run(s);
    }
    {
      session s(got);
      b = oc.run(s);
    }
    const double err = nmse(a, b);
    const bool pass = oc.tolerance == 0 ? a == b : err <= oc.tolerance;
    std::cout << "  " << (pass ? "ok  " : "FAIL") << "  " << oc.name << ": nmse " << err << " (tolerance "
              << oc.tolerance << ")\n";
    CHECK_MESSAGE(pass, oc.name << ": " << ref.name() << " vs " << got.name() << " nmse " << err);
    failed += !pass;
  }
  return failed;
}

// Greedy CTC labels (argmax, repeats merged, blanks dropped) of logits f32 [frames, vocab].
std::vector<int> greedy(const std::vector<float>& logits, int vocab) {
  std::vector<int> out;
  int prev = -1;
  for (std::size_t t = 0; t * vocab < logits.size(); ++t) {
    const auto* row = logits.data() + t * vocab;
    const int best = int(std::max_element(row, row + vocab) - row);
    if (best != prev && best != 0) out.push_back(best);
    prev = best;
  }
  return out;
}

// The CUDA backend, or null after printing why it is skipped.
std::unique_ptr<backend> cuda_or_skip() {
  auto b = kernels::make_cuda_backend(0);
  if (!b) {
    std::cout << "SKIPPED: no usable GPU (" << b.error().message << ")\n";
    return nullptr;
  }
  return std::move(*b);
}

}  // namespace

TEST_SUITE("backend ops") {
  TEST_CASE("every op: the scalar CPU backend against the vectorised one") {
    moe::compute_options scalar;
    scalar.simd = kernels::cpu::simd_level::scalar;
    scalar.dense = scalar.experts = moe::gemm_backend::own;
    auto ref = moe::make_cpu_backend(scalar);
    auto fast = moe::make_cpu_backend();
    MESSAGE(ref->name() << " vs " << fast->name());
    CHECK(compare(*ref, *fast) == 0);
  }

  TEST_CASE("bad arguments are refused with a status and a message") {
    auto b = moe::make_cpu_backend();
    std::vector<row_segment> segs{{0, 10, 0}};
    float dummy = 0;
    CHECK(b->attention(&dummy, 5, segs.data(), 1, {16, 4}, 4, 36, 1e4, nullptr, &dummy) == status::invalid_argument);
    CHECK(b->last_error().find("segment 0 out of range") != std::string::npos);
    CHECK(b->route(&dummy, &dummy, &dummy, &dummy, 1, {8, 30, 2, 4}, nullptr, nullptr, nullptr) ==
          status::invalid_argument);
    int32_t bad_expert = 40;
    CHECK(b->experts(&dummy, &dummy, 32, 144, 48, &dummy, 1, &bad_expert, &dummy, 1, &dummy) ==
          status::invalid_argument);
    CHECK(b->set_math(static_cast<kernels::math_mode>(7)) == status::invalid_argument);
    CHECK(b->set_math(kernels::math_mode::f32) == status::ok);
  }

  TEST_CASE("the CPU backend's bf16 math: off the f32 product, within the bf16 rounding bound of it") {
    auto b = moe::make_cpu_backend();
    const int64_t m = 9, n = 40, k = 144;
    const auto a = random_vec(m * k, 21), w = random_vec(k * n, 22, 0.2f);
    std::vector<float> f32(m * n), bf16(m * n);
    kernels::cpu::matmul_args g{m, n, k, a.data(), k, w.data(), n, f32.data(), n, nullptr};
    REQUIRE(b->matmul(g) == status::ok);
    REQUIRE(b->set_math(kernels::math_mode::bf16) == status::ok);
    g.c = bf16.data();
    REQUIRE(b->matmul(g) == status::ok);
    REQUIRE(b->set_math(kernels::math_mode::f32) == status::ok);
    // Each input rounded to 8 significant bits: <= (2^-8 + 2^-18) of sum |a_i w_i| per element,
    // plus f32 summation (k + 3) 2^-24 of it on each side.
    double worst = 0;
    int bad = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double mag = 0;
        for (int64_t q = 0; q < k; ++q) mag += std::abs(double(a[i * k + q]) * w[q * n + j]);
        const double bound = (std::ldexp(1.0, -8) + std::ldexp(1.0, -18) + 2.0 * double(k + 3) * std::ldexp(1.0, -24)) * mag;
        const double err = std::abs(double(bf16[i * n + j]) - f32[i * n + j]);
        worst = std::max(worst, err / bound);
        bad += !(err <= bound);
      }
    MESSAGE("largest error / bound: " << worst);
    CHECK(bad == 0);
    CHECK(bf16 != f32);
  }

  TEST_CASE("every op: CUDA against the CPU backend (needs a GPU)") {
    auto gpu = cuda_or_skip();
    if (!gpu) return;
    auto cpu = moe::make_cpu_backend();
    MESSAGE(cpu->name() << " vs " << gpu->name());
    CHECK(compare(*cpu, *gpu) == 0);
  }

  TEST_CASE("the default model on CUDA matches PyTorch's golden vectors, expert choices identical (needs a GPU)") {
    auto gpu = cuda_or_skip();
    if (!gpu) return;
    const std::string dir = SLUICE_SOURCE_DIR "/models/default";
    auto model = moe::load_model(dir);
    REQUIRE(model.has_value());
    auto dm = moe::device_model::create(*model, *gpu);
    REQUIRE_MESSAGE(dm.has_value(), dm.error().message);
    auto f = moe::safetensors_file::load(dir + "/golden/test_unseen-00000-0000.safetensors");
    REQUIRE(f.has_value());
    auto fb = *f->read_f32("fbank");
    const moe::fbank_view one[] = {{fb.data(), f->find("fbank")->shape[0]}};
    moe::device_forward_options opt;
    opt.trace = true;
    auto out = (*dm)->forward(one, opt);
    REQUIRE_MESSAGE(out.has_value(), out.error().message);
    const auto logits = *f->read_f32("logits");
    double worst = 0;
    for (std::size_t i = 0; i < logits.size(); ++i) worst = std::max(worst, double(std::abs(logits[i] - (*out)[0].logits[i])));
    MESSAGE("CUDA f32 logits vs PyTorch: max abs err " << worst);
    CHECK(worst <= 1e-3);
    for (int l = 0; l < (*model)->arch().n_layers; ++l) {
      CAPTURE(l);
      auto ref = *f->read_i32("layer" + std::to_string(l) + ".experts");
      CHECK(ref == (*out)[0].layers[l].experts);
    }
    // A batch with a long utterance (the window's left edge cuts keys) and a short one: CUDA
    // against the CPU backend, logits within 1e-3, every expert choice the same.
    std::vector<float> long_fb;
    for (int rep = 0; rep < 6; ++rep) long_fb.insert(long_fb.end(), fb.begin(), fb.end());
    const int64_t mels = (*model)->arch().n_mels;
    const moe::fbank_view batch[] = {{long_fb.data(), int64_t(long_fb.size()) / mels}, {fb.data(), 40}};
    auto cpu = moe::make_cpu_backend();
    auto cpu_model = moe::device_model::create(*model, *cpu);
    REQUIRE(cpu_model.has_value());
    auto want = (*cpu_model)->forward(batch, opt);
    auto got = (*dm)->forward(batch, opt);
    REQUIRE(want.has_value());
    REQUIRE_MESSAGE(got.has_value(), got.error().message);
    for (std::size_t u = 0; u < 2; ++u) {
      CAPTURE(u);
      REQUIRE((*want)[u].logits.size() == (*got)[u].logits.size());
      double err = 0;
      for (std::size_t i = 0; i < (*want)[u].logits.size(); ++i)
        err = std::max(err, double(std::abs((*want)[u].logits[i] - (*got)[u].logits[i])));
      MESSAGE("utterance " << u << ": CUDA vs CPU max abs err " << err);
      CHECK(err <= 1e-3);
      for (int l = 0; l < (*model)->arch().n_layers; ++l) CHECK((*want)[u].layers[l].experts == (*got)[u].layers[l].experts);
    }
    // bf16 products (f32 accumulation): greedy text within 1% of the f32 text's characters.
    REQUIRE(gpu->set_math(kernels::math_mode::bf16) == status::ok);
    auto half = (*dm)->forward(batch);
    REQUIRE_MESSAGE(half.has_value(), half.error().message);
    std::size_t changed = 0, chars = 0;
    for (std::size_t u = 0; u < 2; ++u) {
      const int vocab = (*want)[u].vocab;
      const auto ref = greedy((*want)[u].logits, vocab), bf = greedy((*half)[u].logits, vocab);
      changed += test::sequence_edits(ref, bf);
      chars += ref.size();
    }
    MESSAGE("bf16 vs f32 greedy labels: " << changed << " edits in " << chars);
    CHECK(chars > 100);
    CHECK(changed * 100 <= chars);
  }
}
