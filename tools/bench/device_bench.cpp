// device_bench: throughput of the acoustic model's batched offline forward on a compute
// device (kernels::backend through moe::device_model), the number to set beside PyTorch eager
// on the same device, model and batch (tools/bench/moe_bench_torch.py --device ...).
//
//   device_bench --model DIR [--backend cpu|cuda] [--device N] [--batch 1,16,128,1024]
//                [--seconds 10] [--runs 5] [--math f32|bf16] [--json] [--live 100,1000,10000]
//                [--host-threads 1]
//
// Each batch is --batch utterances of --seconds each (random fbank, mean 8 and deviation 2 as
// moe_bench_torch.py draws it) in one device_model::forward: host CMVN and descriptors, upload,
// every layer on the device, logits downloaded. One warm-up, then --runs timed calls; prints
// min and median ms and the real-time factor (seconds of audio per second of wall time). The
// CPU backend runs on one thread. --math bf16: the backend's matmuls in bf16 with f32
// accumulation (CUDA only).
//
// --live N,...: N live streams (device_model::open_stream) each fed one attention chunk of audio
// (chunk_frames x 4 fbank frames, 640 ms for the default model) per round and stepped together,
// one chunk each (device_model::step); after a warm-up round, --runs rounds. Prints the step's
// min/median ms, split into the host front ends (one thread) and the device part, and how many
// such streams one device keeps at real time from the median (N x chunk seconds / step seconds).
// --host-threads T: the host front ends on T threads (device_model::set_host_threads), in both
// modes; the batched mode also prints the host part of the median call.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/gemm.hpp"
#include "kernels/cuda_backend.hpp"
#include "moe/device/cpu_backend.hpp"
#include "moe/device/device_model.hpp"

using namespace sluice;
using namespace sluice::moe;

namespace {

constexpr int frames_per_second = 100;
constexpr float fbank_mean = 8.0f, fbank_std = 2.0f;

struct options {
  std::string model, backend = "cpu";
  int device = 0;
  std::vector<int> batches{1, 16, 128};
  double seconds = 10;
  int runs = 5;
  bool json = false;
  bool bf16 = false;
  std::vector<int> live;
  int host_threads = 1;
};

int usage(const char* why) {
  std::fprintf(stderr, "device_bench: %s\nusage: device_bench --model DIR [--backend cpu|cuda] [--device N] "
               "[--batch 1,16,128] [--seconds 10] [--runs 5] [--math f32|bf16] [--json]\n", why);
  return 2;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::atoi(item.c_str()));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--json") o.json = true;
    else if (!(v = next())) return usage(("missing value for " + a).c_str());
    else if (a == "--model") o.model = v;
    else if (a == "--backend") o.backend = v;
    else if (a == "--device") o.device = std::atoi(v);
    else if (a == "--batch") o.batches = parse_list(v);
    else if (a == "--seconds") o.seconds = std::atof(v);
    else if (a == "--runs") o.runs = std::atoi(v);
    else if (a == "--math") o.bf16 = std::string(v) == "bf16";
    else if (a == "--live") o.live = parse_list(v);
    else if (a == "--host-threads") o.host_threads = std::atoi(v);
    else return usage(("unknown option " + a).c_str());
  }
  if (o.model.empty()) return usage("--model is required");
  if (o.runs < 1 || o.seconds <= 0 || o.batches.empty() ||
      std::any_of(o.batches.begin(), o.batches.end(), [](int b) { return b < 1; }))
    return usage("--runs, --seconds and every --batch must be positive");
  kernels::cpu::set_blas_threads(1);
  auto model = load_model(o.model);
  if (!model) return std::fprintf(stderr, "device_bench: %s\n", model.error().message.c_str()), 1;
  std::unique_ptr<kernels::backend> dev;
  if (o.backend == "cpu") {
    dev = make_cpu_backend();
  } else if (o.backend == "cuda") {
    auto b = kernels::make_cuda_backend(o.device);
    if (!b) return std::fprintf(stderr, "device_bench: %s\n", b.error().message.c_str()), 1;
    dev = std::move(*b);
  } else {
    return usage("--backend is cpu or cuda");
  }
  if (o.bf16 && dev->set_math(kernels::math_mode::bf16) != kernels::status::ok)
    return std::fprintf(stderr, "device_bench: %s\n", dev->last_error().c_str()), 1;
  auto dm = device_model::create(*model, *dev);
  if (!dm) return std::fprintf(stderr, "device_bench: %s\n", dm.error().message.c_str()), 1;

  const int64_t frames = static_cast<int64_t>(o.seconds * frames_per_second), mels = (*model)->arch().n_mels;
  std::vector<float> fbank(static_cast<std::size_t>(frames * mels));
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(fbank_mean, fbank_std);
  for (auto& x : fbank) x = dist(rng);
  if (!o.json)
    std::printf("device_bench: %s, %.1f MB of weights on the device, %.1f s per utterance\n", dev->name().c_str(),
                static_cast<double>((*dm)->weight_bytes()) / 1e6, o.seconds);
  (*dm)->set_host_threads(o.host_threads);
  if (!o.live.empty()) {
    const auto& arch = (*model)->arch();
    const int64_t chunk_in = int64_t{arch.chunk_frames} * arch.subsampling;  // fbank frames per chunk
    const double chunk_s = static_cast<double>(chunk_in) / frames_per_second;
    for (int n_streams : o.live) {
      std::vector<std::unique_ptr<device_stream>> owned;
      std::vector<device_stream*> streams;
      for (int i = 0; i < n_streams; ++i) {
        auto st = (*dm)->open_stream();
        if (!st) return std::fprintf(stderr, "device_bench: %s\n", st.error().message.c_str()), 1;
        streams.push_back(st->get());
        owned.push_back(std::move(*st));
      }
      std::vector<double> total, host, device;
      int64_t at = 0;
      for (int r = 0; r <= o.runs; ++r) {
        // The same audio for every stream, a chunk further each round (wrapping around).
        if (at + chunk_in > frames) at = 0;
        for (auto* s : streams)
          if (auto ok = s->host().accept_fbank(fbank.data() + at * mels, chunk_in); !ok)
            return std::fprintf(stderr, "device_bench: %s\n", ok.error().message.c_str()), 1;
        at += chunk_in;
        const auto t0 = std::chrono::steady_clock::now();
        auto out = (*dm)->step(streams, 1);
        const auto t1 = std::chrono::steady_clock::now();
        if (!out) return std::fprintf(stderr, "device_bench: live %d: %s\n", n_streams, out.error().message.c_str()), 1;
        if (r == 0) continue;  // warm-up
        total.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        host.push_back((*dm)->last_step_timing().host_ms);
        device.push_back((*dm)->last_step_timing().device_ms);
      }
      for (auto* v : {&total, &host, &device}) std::sort(v->begin(), v->end());
      const std::size_t mid = total.size() / 2;
      const double at_real_time = n_streams * chunk_s / (total[mid] / 1e3);
      if (o.json)
        std::printf("{\"bench\": \"device_bench_live\", \"backend\": \"%s\", \"math\": \"%s\", \"streams\": %d, \"host_threads\": %d, "
                    "\"chunk_s\": %.3f, \"min_ms\": %.3f, \"median_ms\": %.3f, \"host_median_ms\": %.3f, "
                    "\"device_median_ms\": %.3f, \"streams_at_real_time\": %.0f}\n",
                    dev->name().c_str(), o.bf16 ? "bf16" : "f32", n_streams, o.host_threads, chunk_s, total.front(), total[mid],
                    host[mid], device[mid], at_real_time);
      else
        std::printf("live %6d streams, %.2f s chunks: step min %8.2f ms, median %8.2f ms (host front ends %8.2f, "
                    "device %8.2f) | %8.0f such streams at real time\n",
                    n_streams, chunk_s, total.front(), total[mid], host[mid], device[mid], at_real_time);
    }
    return 0;
  }
  for (int batch : o.batches) {
    // Every utterance is the same audio: the work per utterance does not depend on it.
    std::vector<fbank_view> utts(static_cast<std::size_t>(batch), fbank_view{fbank.data(), frames});
    std::vector<double> ms, host;
    for (int r = 0; r <= o.runs; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      auto out = (*dm)->forward(utts);
      const auto t1 = std::chrono::steady_clock::now();
      if (!out) return std::fprintf(stderr, "device_bench: batch %d: %s\n", batch, out.error().message.c_str()), 1;
      if (r == 0) continue;  // warm-up
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      host.push_back((*dm)->last_step_timing().host_ms);
    }
    std::sort(ms.begin(), ms.end());
    std::sort(host.begin(), host.end());
    const double host_ms = host[host.size() / 2];
    const double audio_s = o.seconds * batch, min_ms = ms.front(), median_ms = ms[ms.size() / 2];
    if (o.json)
      std::printf("{\"bench\": \"device_bench\", \"backend\": \"%s\", \"math\": \"%s\", \"batch\": %d, \"seconds\": %g, \"runs\": %d, "
                  "\"min_ms\": %.3f, \"median_ms\": %.3f, \"host_median_ms\": %.3f, \"host_threads\": %d, \"x_real_time\": %.1f}\n",
                  dev->name().c_str(), o.bf16 ? "bf16" : "f32", batch, o.seconds, o.runs, min_ms, median_ms, host_ms,
                  o.host_threads, audio_s / (min_ms / 1e3));
    else
      std::printf("batch %5d: min %9.2f ms, median %9.2f ms (host %8.2f) | %10.1fx real time\n", batch, min_ms,
                  median_ms, host_ms, audio_s / (min_ms / 1e3));
  }
  return 0;
}
