// frontend_bench: what the file front end costs per second of audio, stage by stage, on one thread.
//
//   frontend_bench [--model DIR] [--audio WAV] [--repeats R]
//
// The stages `sluice transcribe` runs before the model, each timed on its own, in turns within
// each repeat (so a slow moment of the machine hits all of them alike), min and median of R:
//   decode+resample  dsp::prepare_file(..., front_end::samples): read, decode, every channel to 16 kHz
//   vad              dsp::analyze_speech on every 16 kHz channel (the VAD over the whole call)
//   fbank            the model's fbank (model.json's features) over every VAD segment of every
//                    channel, as the channel actors compute it
// Printed per stage: wall seconds, microseconds per second of call audio (all channels together)
// and times real time. A hash of each stage's output bits (first repeat, taken after the clock
// stops) is printed too, so two builds can be seen to compute the same bits: the 16 kHz samples;
// the VAD's regions and each frame's energies, flatness and activity; the fbank's features.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "config/sluice_config.hpp"
#include "dsp/fbank.hpp"
#include "dsp/file_speech.hpp"
#include "dsp/vad.hpp"
#include "moe/acoustic_model.hpp"
#include "moe/model_manifest.hpp"

using namespace sluice;
using clk = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int usage(const char* msg) {
  std::fprintf(stderr, "frontend_bench: %s\nusage: frontend_bench [--model DIR] [--audio WAV] [--repeats R]\n", msg);
  return 2;
}

int failed(const std::string& what) {
  std::fprintf(stderr, "frontend_bench: %s\n", what.c_str());
  return 1;
}

// FNV-1a over the bytes of values: equal only when every bit is (sums could cancel or round away
// a difference).
struct bits_hash {
  uint64_t h = 1469598103934665603ull;
  template <typename T>
  void add(const T& v) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    for (unsigned char b : bytes) h = (h ^ b) * 1099511628211ull;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir = "models/default";
  std::string audio_path = "tests/data/sample_call_8k_mulaw_stereo.wav";
  int repeats = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a != "--model" && a != "--audio" && a != "--repeats") return usage(("unknown option " + a).c_str());
    if (i + 1 >= argc) return usage(("missing value after " + a).c_str());
    const std::string value = argv[++i];
    if (a == "--model") model_dir = value;
    else if (a == "--audio") audio_path = value;
    else {
      char* end = nullptr;
      const long n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || n < 1 || n > 100000) return usage("--repeats takes a count 1 .. 100000");
      repeats = static_cast<int>(n);
    }
  }

  auto model = moe::load_model(model_dir);
  if (!model) return failed(model.error().message);
  auto fbank = dsp::fbank_computer::create(moe::fbank_config_of((*model)->manifest().features), dsp::model_sample_rate);
  if (!fbank) return failed(fbank.error().message);

  const config::sluice_config cfg;
  auto sliced = dsp::prepare_file(audio_path, cfg, dsp::front_end::sliced);
  if (!sliced) return failed(sliced.error().message);
  const double call_s = sliced->duration_s;
  std::size_t segments = 0;
  for (const auto& c : sliced->channels) segments += c.segments.size();
  std::printf("audio %s: %.1f s, %zu channels at %d Hz, %zu VAD segments; %d repeats, one thread\n",
              audio_path.c_str(), call_s, sliced->channels.size(), sliced->input_sample_rate, segments, repeats);

  // Each stage's outputs are kept while it is timed and hashed after the clock stops.
  std::vector<double> t_prepare, t_vad, t_fbank;
  bits_hash h_samples, h_vad, h_fbank;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = clk::now();
    auto samples = dsp::prepare_file(audio_path, cfg, dsp::front_end::samples);
    t_prepare.push_back(std::chrono::duration<double>(clk::now() - t0).count());
    if (!samples) return failed(samples.error().message);

    std::vector<dsp::vad_analysis> vads;
    t0 = clk::now();
    for (const auto& c : samples->channels) {
      auto vad = dsp::analyze_speech(c.samples, cfg.vad);
      if (!vad) return failed(vad.error().message);
      vads.push_back(std::move(*vad));
    }
    t_vad.push_back(std::chrono::duration<double>(clk::now() - t0).count());

    std::vector<std::vector<float>> features;
    t0 = clk::now();
    for (const auto& c : sliced->channels) {
      for (const auto& seg : c.segments) {
        const auto span = std::span<const float>(c.samples).subspan(
            static_cast<std::size_t>(seg.start_sample), static_cast<std::size_t>(seg.end_sample - seg.start_sample));
        features.push_back(fbank->compute(span));
      }
    }
    t_fbank.push_back(std::chrono::duration<double>(clk::now() - t0).count());

    if (r == 0) {  // the same input every repeat: hash the first repeat's outputs
      for (const auto& c : samples->channels)
        for (float s : c.samples) h_samples.add(s);
      for (const auto& v : vads) {
        for (const auto& reg : v.regions) h_vad.add(reg);
        for (const auto& f : v.frames) {
          h_vad.add(f.energy_db);
          h_vad.add(f.high_energy_db);
          h_vad.add(f.flatness_db);
          h_vad.add(f.active);
        }
      }
      for (const auto& f : features)
        for (float x : f) h_fbank.add(x);
    }
  }

  std::printf("%-16s %9s %9s %14s %10s   %s\n", "stage", "min s", "median s", "us/audio s med", "xRT med",
              "output hash");
  auto row = [&](const char* name, const std::vector<double>& t, const bits_hash& check) {
    const double med = median(t);
    std::printf("%-16s %9.4f %9.4f %14.1f %10.0f   %016llx\n", name, *std::min_element(t.begin(), t.end()), med,
                1e6 * med / call_s, call_s / med, static_cast<unsigned long long>(check.h));
  };
  row("decode+resample", t_prepare, h_samples);
  row("vad", t_vad, h_vad);
  row("fbank", t_fbank, h_fbank);
  return 0;
}
