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
// and times real time. A checksum of each stage's output is printed too, so two builds can be
// seen to compute the same thing (sums in double: of the 16 kHz samples; of the VAD's frame count,
// region edges and each frame's energy and flatness in dB; of the fbank's features).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/sluice_config.hpp"
#include "dsp/fbank.hpp"
#include "dsp/file_speech.hpp"
#include "dsp/vad.hpp"
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

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir = "models/default";
  std::string audio_path = "tests/data/sample_call_8k_mulaw_stereo.wav";
  int repeats = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage(("missing value after " + a).c_str());
    if (a == "--model") model_dir = argv[++i];
    else if (a == "--audio") audio_path = argv[++i];
    else if (a == "--repeats") repeats = std::max(1, std::atoi(argv[++i]));
    else return usage(("unknown option " + a).c_str());
  }

  std::ifstream manifest_file(model_dir + "/model.json");
  if (!manifest_file) return usage(("cannot read " + model_dir + "/model.json").c_str());
  std::stringstream manifest_text;
  manifest_text << manifest_file.rdbuf();
  auto manifest = moe::parse_model_manifest(manifest_text.str(), model_dir + "/model.json");
  if (!manifest) return usage(manifest.error().message.c_str());
  auto fbank = dsp::fbank_computer::create(moe::fbank_config_of(manifest->features), dsp::model_sample_rate);
  if (!fbank) return usage(fbank.error().message.c_str());

  const config::sluice_config cfg;
  auto sliced = dsp::prepare_file(audio_path, cfg, dsp::front_end::sliced);
  if (!sliced) return usage(sliced.error().message.c_str());
  const double call_s = sliced->duration_s;
  std::size_t segments = 0;
  for (const auto& c : sliced->channels) segments += c.segments.size();
  std::printf("audio %s: %.1f s, %zu channels at %d Hz, %zu VAD segments; %d repeats, one thread\n",
              audio_path.c_str(), call_s, sliced->channels.size(), sliced->input_sample_rate, segments, repeats);

  std::vector<double> t_prepare, t_vad, t_fbank;
  double sum_samples = 0, sum_fbank = 0;
  double vad_check = 0;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = clk::now();
    auto samples = dsp::prepare_file(audio_path, cfg, dsp::front_end::samples);
    t_prepare.push_back(std::chrono::duration<double>(clk::now() - t0).count());
    if (!samples) return usage(samples.error().message.c_str());
    sum_samples = 0;
    for (const auto& c : samples->channels)
      for (float s : c.samples) sum_samples += s;

    t0 = clk::now();
    vad_check = 0;
    for (const auto& c : samples->channels) {
      auto vad = dsp::analyze_speech(c.samples, cfg.vad);
      if (!vad) return usage(vad.error().message.c_str());
      vad_check += static_cast<double>(vad->frames.size());
      for (const auto& reg : vad->regions) vad_check += static_cast<double>(reg.start_sample + reg.end_sample);
      for (const auto& f : vad->frames) vad_check += f.energy_db + f.flatness_db;
    }
    t_vad.push_back(std::chrono::duration<double>(clk::now() - t0).count());

    t0 = clk::now();
    sum_fbank = 0;
    for (const auto& c : sliced->channels) {
      for (const auto& seg : c.segments) {
        const auto span = std::span<const float>(c.samples).subspan(
            static_cast<std::size_t>(seg.start_sample), static_cast<std::size_t>(seg.end_sample - seg.start_sample));
        const auto features = fbank->compute(span);
        for (float f : features) sum_fbank += f;
      }
    }
    t_fbank.push_back(std::chrono::duration<double>(clk::now() - t0).count());
  }

  std::printf("%-16s %9s %9s %14s %10s   %s\n", "stage", "min s", "median s", "us/audio s med", "xRT med", "checksum");
  auto row = [&](const char* name, const std::vector<double>& t, double check) {
    const double med = median(t);
    std::printf("%-16s %9.4f %9.4f %14.1f %10.0f   %.6f\n", name, *std::min_element(t.begin(), t.end()), med,
                1e6 * med / call_s, call_s / med, check);
  };
  row("decode+resample", t_prepare, sum_samples);
  row("vad", t_vad, vad_check);
  row("fbank", t_fbank, sum_fbank);
  return 0;
}
