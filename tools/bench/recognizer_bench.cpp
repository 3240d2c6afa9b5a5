// recognizer_bench: the synchronous recognizer core (moe::recognizer) alone, no actors, on the
// bundled call's model segments (what `sluice transcribe` sends), against PyTorch eager's batched
// forward of the same model on the same threads, in the same run.
//
//   recognizer_bench [--model DIR] [--audio WAV] [--copies 16] [--threads 1] [--batch 16]
//                    [--runs 3] [--torch] [--decoder auto|greedy|beam|lexicon] [--math f32|bf16]
//
// Every segment of every channel of --copies copies of the call is one stream. Each of --threads
// threads has its own recognizer (sharing one recognizer_resources) and every --threads-th stream,
// and steps them --batch at a time (max_chunks_per_step chunks per step) until every stream is
// final: what a lane will do. Timed: fbank (dsp), then recognition (model + decoder); the
// recognition is timed again with the greedy decoder to show the decoder's share. Reports audio
// seconds per wall second (x real time) of each, min and median of --runs.
//
// --torch also runs tools/bench/moe_bench_torch.py: the same model's offline forward in PyTorch
// eager, --batch streams of the segments' mean length in batches of the size at which PyTorch is
// fastest (moe_bench_torch.py --best-batch: its masked full attention grows slower per stream
// with the batch), on --threads threads (no fbank, no decoding: the forward alone) and prints
// recognition / torch (both x real time).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "dsp/fbank.hpp"
#include "dsp/file_speech.hpp"
#include "moe/model_manifest.hpp"
#include "moe/recognizer/recognizer.hpp"

using namespace sluice;
using clk = std::chrono::steady_clock;

namespace {

struct options {
  std::string model = "models/default";
  std::string audio = "tests/data/sample_call_8k_mulaw_stereo.wav";
  int copies = 16, threads = 1, batch = 16, runs = 3;
  bool torch = false;
  std::string decoder;  // empty: the config's ([decoder] mode auto)
  std::string math = "f32";  // model.math: f32, or bf16 products (AVX-512 BF16 CPUs)
};

double seconds_since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

struct timing {
  double min_s = 0, median_s = 0;
};
timing summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2]};
}

// Runs fn(t) on `threads` threads and returns the wall time.
template <class F>
double on_threads(int threads, F fn) {
  const auto t0 = clk::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(fn, t);
  for (auto& th : pool) th.join();
  return seconds_since(t0);
}

// One thread's share: streams t, t + threads, ...; stepped `batch` at a time until final.
// Returns the number of words recognised (so nothing is optimised away) or -1 on an error.
int64_t recognize_share(const std::shared_ptr<const moe::recognizer_resources>& res,
                        const std::vector<std::vector<float>>& fbanks, int t, const options& o, int64_t max_chunks) {
  moe::recognizer rec(res);
  const int64_t mels = res->model->arch().n_mels;
  int64_t words = 0;
  std::vector<std::size_t> mine;
  for (std::size_t i = static_cast<std::size_t>(t); i < fbanks.size(); i += static_cast<std::size_t>(o.threads))
    mine.push_back(i);
  for (std::size_t g = 0; g < mine.size(); g += static_cast<std::size_t>(o.batch)) {
    std::vector<moe::recognizer_stream> streams;
    for (std::size_t k = g; k < std::min(mine.size(), g + static_cast<std::size_t>(o.batch)); ++k) {
      auto s = rec.create_stream();
      if (!s) return -1;
      const auto& fb = fbanks[mine[k]];
      if (!s->accept_features(fb.data(), static_cast<int64_t>(fb.size()) / mels) || !s->input_finished()) return -1;
      streams.push_back(std::move(*s));
    }
    std::vector<moe::recognizer_stream*> ptrs;
    for (auto& s : streams) ptrs.push_back(&s);
    while (std::any_of(streams.begin(), streams.end(), [](const auto& s) { return s.is_ready(); }))
      if (!rec.decode_streams(ptrs, max_chunks)) return -1;
    for (auto& s : streams) {
      if (!s.is_final()) return -1;
      words += static_cast<int64_t>(s.get_result().words.size());
    }
  }
  return words;
}

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model") o.model = next();
    else if (a == "--audio") o.audio = next();
    else if (a == "--copies") o.copies = std::stoi(next());
    else if (a == "--threads") o.threads = std::stoi(next());
    else if (a == "--batch") o.batch = std::stoi(next());
    else if (a == "--runs") o.runs = std::stoi(next());
    else if (a == "--decoder") o.decoder = next();
    else if (a == "--torch") o.torch = true;
    else if (a == "--math") o.math = next();
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return false;
    }
  }
  return o.copies > 0 && o.threads > 0 && o.batch > 0 && o.runs > 0 && (o.math == "f32" || o.math == "bf16");
}

// PyTorch's x real time for `batch` streams of `seconds` each on `threads` threads, or 0.
double torch_x_real_time(const options& o, double seconds) {
  const std::string cmd = "OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 tools/bench/moe_bench_torch.py --json --model " +
                          o.model + " --batch " + std::to_string(o.batch) + " --threads " + std::to_string(o.threads) +
                          " --runs " + std::to_string(o.runs) + " --seconds " + std::to_string(seconds) + " --best-batch";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return 0;
  std::string out;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p.get())) out += buf.data();
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.contains("min_ms")) {
    std::fprintf(stderr, "torch reference failed: %s\n", out.c_str());
    return 0;
  }
  std::printf("torch %s eager, %d threads, %d streams of %.2f s in batches of %d (its fastest): min %.1f ms, "
              "median %.1f ms\n",
              j["torch"].get<std::string>().c_str(), o.threads, o.batch, seconds, j["batch"].get<int>(),
              j["min_ms"].get<double>(), j["median_ms"].get<double>());
  return o.batch * seconds / (j["min_ms"].get<double>() / 1000.0);
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr, "usage: recognizer_bench [--model DIR] [--audio WAV] [--copies N] [--threads T] "
                         "[--batch B] [--runs R] [--torch] [--decoder MODE] [--math f32|bf16]\n");
    return 2;
  }
  config::sluice_config cfg;
  cfg.model.dir = o.model;
  cfg.model.math = o.math;
  auto model = moe::load_model(o.model);
  if (!model) {
    std::fprintf(stderr, "model: %s\n", model.error().message.c_str());
    return 1;
  }
  auto speech = dsp::prepare_file(o.audio, cfg);
  if (!speech) {
    std::fprintf(stderr, "audio: %s\n", speech.error().message.c_str());
    return 1;
  }
  auto fbank = dsp::fbank_computer::create(moe::fbank_config_of((*model)->manifest().features), dsp::model_sample_rate);
  if (!fbank) return 1;
  std::vector<std::vector<float>> audio;  // one per stream, 16 kHz
  for (int c = 0; c < o.copies; ++c)
    for (const auto& ch : speech->channels)
      for (const auto& s : ch.segments)
        audio.emplace_back(ch.samples.begin() + s.start_sample, ch.samples.begin() + s.end_sample);
  double audio_s = 0;
  for (const auto& a : audio) audio_s += static_cast<double>(a.size()) / dsp::model_sample_rate;
  std::printf("%zu streams (%d copies of %s), %.1f s of audio, %d threads, batch %d\n", audio.size(), o.copies,
              o.audio.c_str(), audio_s, o.threads, o.batch);

  std::vector<std::vector<float>> fbanks(audio.size());
  std::vector<double> fbank_s, rec_s, greedy_s;
  for (int r = 0; r < o.runs; ++r)
    fbank_s.push_back(on_threads(o.threads, [&](int t) {
      for (std::size_t i = static_cast<std::size_t>(t); i < audio.size(); i += static_cast<std::size_t>(o.threads))
        fbanks[i] = fbank->compute(audio[i]);
    }));

  auto run = [&](const std::string& mode, std::vector<double>& times) -> bool {
    auto c = cfg;
    if (!mode.empty()) c.decoder.mode = mode;
    auto res = moe::recognizer_resources::create(c, *model);
    if (!res) {
      std::fprintf(stderr, "recognizer: %s\n", res.error().message.c_str());
      return false;
    }
    std::vector<int64_t> words(static_cast<std::size_t>(o.threads));
    recognize_share(*res, {fbanks.front()}, 0, o, cfg.engine.max_chunks_per_step);  // warm-up
    for (int r = 0; r < o.runs; ++r)
      times.push_back(on_threads(o.threads, [&](int t) {
        words[static_cast<std::size_t>(t)] = recognize_share(*res, fbanks, t, o, cfg.engine.max_chunks_per_step);
      }));
    int64_t total = 0;
    for (auto w : words) {
      if (w < 0) {
        std::fprintf(stderr, "recognition failed\n");
        return false;
      }
      total += w;
    }
    std::printf("decoder %s (%s): %lld words\n", mode.empty() ? "from config" : mode.c_str(),
                std::string(moe::to_string((*res)->mode)).c_str(), static_cast<long long>(total));
    return true;
  };
  if (!run(o.decoder, rec_s) || !run("greedy", greedy_s)) return 1;

  auto row = [&](const char* what, const std::vector<double>& v) {
    const auto t = summarize(v);
    std::printf("%-34s min %8.3f s  median %8.3f s  | %8.1fx real time (RTF %.5f)\n", what, t.min_s, t.median_s,
                audio_s / t.min_s, t.min_s / audio_s);
    return audio_s / t.min_s;
  };
  row("fbank (dsp)", fbank_s);
  const double rec_x = row("recognition (model + decoder)", rec_s);
  row("recognition, greedy decoder", greedy_s);
  const auto fb = summarize(fbank_s), rc = summarize(rec_s), gr = summarize(greedy_s);
  std::printf("%-34s %8.1fx real time\n", "fbank + recognition", audio_s / (fb.min_s + rc.min_s));
  std::printf("decoder share of recognition: %.0f%% (recognition - greedy)\n",
              100.0 * std::max(0.0, rc.min_s - gr.min_s) / rc.min_s);
  if (o.torch) {
    const double torch_x = torch_x_real_time(o, audio_s / static_cast<double>(audio.size()));
    if (torch_x > 0)
      std::printf("ratio recognition / torch forward: %.2f (%.1fx vs %.1fx real time)\n", rec_x / torch_x, rec_x,
                  torch_x);
  }
  return 0;
}
