// moe_bench: speed of the acoustic model forward on the CPU, one thread.
//
//   moe_bench --model DIR [--seconds 60] [--runs 5] [--simd avx512|avx2|scalar]
//             [--dense auto|blas|own] [--experts auto|blas|own] [--all] [--stream] [--micro]
//             [--math f32|bf16]
//
// Times forward_offline on random fbank (--seconds of audio, 100 frames per second) and
// prints min / median ms per run, ms per second of audio and the real-time factor. --all
// times every (dense, experts) backend pair; --stream also times a stream fed one second at a
// time; --micro times one routed expert's SwiGLU (d_model x expert_hidden of the model) on
// OpenBLAS and on our kernel at 20 .. 200 tokens, the sizes the grouped GEMM sees.
// OpenBLAS runs single-threaded; so does everything else here.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/bf16_gemm.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/simd.hpp"
#include "moe/acoustic_stream.hpp"
#include "moe/bf16_weights.hpp"
#include "moe/forward.hpp"
#include "moe/routed_experts.hpp"

using namespace sluice;
using namespace sluice::moe;

namespace {

constexpr int frames_per_second = 100;  // 10 ms fbank hop
constexpr float fbank_mean = 8.0f, fbank_std = 2.0f;
constexpr int stream_piece_frames = 100;  // one second per accept_fbank call
constexpr int micro_repeats = 200;

struct options {
  std::string model;
  double seconds = 60;
  int runs = 5;
  compute_options compute;
  bool all = false, stream = false, micro = false, bf16 = false;
};

struct timing {
  double min_ms = 0, median_ms = 0;  // wall clock
  double cpu_min_ms = 0;             // this thread's CPU time: less disturbed on a busy machine
};

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

timing time_runs(int runs, const std::function<void()>& fn) {
  fn();  // warm-up: page in weights, grow scratch buffers
  std::vector<double> ms, cpu;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_ms();
    fn();
    cpu.push_back(thread_cpu_ms() - c0);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2], *std::min_element(cpu.begin(), cpu.end())};
}

void report(const char* what, const timing& t, double seconds) {
  std::printf("%-44s wall min %8.2f median %8.2f ms, cpu min %8.2f ms | %6.3f ms per s of audio, RTF %.5f\n", what,
              t.min_ms, t.median_ms, t.cpu_min_ms, t.min_ms / seconds, t.min_ms / 1000.0 / seconds);
}

std::string label(const compute_options& c) {
  const compute_ctx ctx(c);
  return std::string("offline ") + kernels::cpu::to_string(c.simd) + ", dense " + to_string(ctx.dense_backend()) +
         ", experts " + to_string(ctx.small_backend());
}

int bench_offline(const acoustic_model& model, const std::vector<float>& fbank, int64_t frames, const options& o,
                  const compute_options& c) {
  forward_options fo;
  fo.compute = c;
  workspace ws;
  bool ok = true;
  const timing t = time_runs(o.runs, [&] { ok &= forward_offline(model, fbank.data(), frames, fo, &ws).has_value(); });
  if (!ok) return std::fprintf(stderr, "forward failed\n"), 1;
  report(label(c).c_str(), t, o.seconds);
  return 0;
}

int bench_stream(const std::shared_ptr<const acoustic_model>& model, const std::vector<float>& fbank, int64_t frames,
                 const options& o) {
  stream_options so;
  so.compute = o.compute;
  auto s = acoustic_stream::create(model, so);
  if (!s) return std::fprintf(stderr, "%s\n", s.error().message.c_str()), 1;
  const int64_t mels = model->arch().n_mels;
  const timing t = time_runs(o.runs, [&] {
    s->reset();
    for (int64_t at = 0; at < frames; at += stream_piece_frames)
      (void)s->accept_fbank(fbank.data() + at * mels, std::min<int64_t>(stream_piece_frames, frames - at));
    (void)s->finish();
  });
  report("stream, 1 s per call (same compute options)", t, o.seconds);
  return 0;
}

void bench_micro(const architecture& a, kernels::cpu::simd_level simd) {
  const int64_t d = a.d_model, h = a.expert_hidden;
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 0.1f);
  std::vector<float> gate_up(d * 2 * h), down(h * d);
  for (auto& v : gate_up) v = nd(rng);
  for (auto& v : down) v = nd(rng);
  std::printf("\none expert's SwiGLU (d %lld, hidden %lld), %s: us per call (ns per token)\n", (long long)d,
              (long long)h, kernels::cpu::to_string(simd));
  // The bf16 kernel on the same three weight views, where the CPU has AVX-512 BF16.
  auto packed = std::make_shared<bf16_weights>();
  packed->add(gate_up.data(), d, h, 2 * h);
  packed->add(gate_up.data() + h, d, h, 2 * h);
  packed->add(down.data(), h, d, d);
  const bool bf16 = kernels::cpu::bf16_supported();
  std::printf("%8s %22s %22s %22s\n", "tokens", "OpenBLAS", "own kernel", bf16 ? "own bf16 kernel" : "(no AVX-512 BF16)");
  for (int64_t m : {8, 20, 50, 100, 200, 400}) {
    std::vector<float> x(m * d), hbuf(m * 2 * h), out(m * d);
    for (auto& v : x) v = nd(rng);
    std::printf("%8lld", (long long)m);
    for (int col = 0; col < (bf16 ? 3 : 2); ++col) {
      const auto backend = col == 0 ? gemm_backend::blas : gemm_backend::own;
      const compute_ctx ctx(compute_options{simd, backend, backend, col == 2 ? packed : nullptr});
      const timing t = time_runs(5, [&] {
        for (int r = 0; r < micro_repeats; ++r)
          swiglu_forward(ctx, true, gate_up.data(), down.data(), d, h, x.data(), m, hbuf.data(), out.data(), false);
      });
      const double us = t.min_ms * 1000.0 / micro_repeats;
      std::printf(" %12.2f (%6.1f)", us, us * 1000.0 / m);
    }
    std::printf("\n");
  }
}

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model") {
      o.model = value();
    } else if (a == "--seconds") {
      o.seconds = std::atof(value().c_str());
    } else if (a == "--runs") {
      o.runs = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--simd") {
      auto l = kernels::cpu::parse_simd_level(value());
      if (!l) return std::fprintf(stderr, "%s\n", l.error().message.c_str()), false;
      o.compute.simd = *l;
    } else if (a == "--dense" || a == "--experts") {
      const std::string v = value();
      if (v != "blas" && v != "own" && v != "auto")
        return std::fprintf(stderr, "%s takes auto, blas or own\n", a.c_str()), false;
      (a == "--dense" ? o.compute.dense : o.compute.experts) =
          v == "blas" ? gemm_backend::blas : v == "own" ? gemm_backend::own : gemm_backend::automatic;
    } else if (a == "--math") {
      const std::string v = value();
      if (v != "f32" && v != "bf16") return std::fprintf(stderr, "--math takes f32 or bf16\n"), false;
      o.bf16 = v == "bf16";
    } else if (a == "--all") {
      o.all = true;
    } else if (a == "--stream") {
      o.stream = true;
    } else if (a == "--micro") {
      o.micro = true;
    } else {
      return std::fprintf(stderr, "unknown argument %s\n", a.c_str()), false;
    }
  }
  if (o.model.empty()) return std::fprintf(stderr, "usage: moe_bench --model DIR [options]\n"), false;
  return o.seconds > 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) return 2;
  kernels::cpu::set_blas_threads(1);
  if (!kernels::cpu::simd_supported(o.compute.simd)) {
    std::fprintf(stderr, "this CPU does not run %s\n", kernels::cpu::to_string(o.compute.simd));
    return 2;
  }
  const auto load_start = std::chrono::steady_clock::now();
  auto model = load_model(o.model);
  if (!model) return std::fprintf(stderr, "%s\n", model.error().message.c_str()), 1;
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
  const auto& a = (*model)->arch();
  if (o.bf16) {
    if (!kernels::cpu::bf16_supported()) return std::fprintf(stderr, "--math bf16: this CPU has no AVX-512 BF16\n"), 2;
    o.compute.bf16 = bf16_weights::build(*model);
  }
  const int64_t frames = static_cast<int64_t>(o.seconds * frames_per_second);
  std::vector<float> fbank(frames * a.n_mels);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(fbank_mean, fbank_std);
  for (auto& v : fbank) v = nd(rng);
  std::printf("model %s: d_model %d, %d layers, %d routed experts (top %d of %d groups, top-%d), chunk %d left %d\n",
              o.model.c_str(), a.d_model, a.n_layers, a.n_routed, a.top_groups, a.n_groups, a.top_k, a.chunk_frames,
              a.left_chunks);
  std::printf("loaded and validated in %.1f ms; input %.1f s (%lld fbank frames -> %lld model frames), %d runs, "
              "1 thread\n\n",
              load_ms, o.seconds, (long long)frames, (long long)subsampled_length(frames), o.runs);

  if (o.all) {
    for (auto dense : {gemm_backend::blas, gemm_backend::own})
      for (auto experts : {gemm_backend::blas, gemm_backend::own})
        if (int rc = bench_offline(**model, fbank, frames, o, compute_options{o.compute.simd, dense, experts, o.compute.bf16})) return rc;
  } else if (int rc = bench_offline(**model, fbank, frames, o, o.compute)) {
    return rc;
  }
  if (o.stream)
    if (int rc = bench_stream(*model, fbank, frames, o)) return rc;
  if (o.micro) bench_micro(a, o.compute.simd);
  return 0;
}
