// sluice transcribe FILE...: decode -> resample to 16 kHz -> optional denoise -> VAD slicing ->
// fbank -> acoustic model -> CTC prefix beam search (+ word LM when the model ships one,
// + hotwords) -> text/JSON/SRT/VTT. Each channel of a file is transcribed on its own.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include <spdlog/spdlog.h>

#include "dsp/fbank.hpp"
#include "moe/acoustic_model.hpp"
#include "moe/decoder/arpa_lm.hpp"
#include "moe/decoder/beam_search_decoder.hpp"
#include "moe/decoder/context_graph.hpp"
#include "moe/forward.hpp"
#include "dsp/file_speech.hpp"
#include "tools/sluice/cli.hpp"
#include "tools/sluice/transcript.hpp"

namespace sluice::cli {
namespace {

constexpr int64_t samples_per_ms = dsp::model_sample_rate / 1000;
constexpr double progress_min_duration_s = 60.0;  // shorter files finish before progress helps
constexpr float default_hotword_weight = 3.0f;
constexpr float max_hotword_weight = 100.0f;  // the context graph's limit
constexpr const char* lm_file_name = "lm.arpa";

struct transcribe_args {
  transcript_format format = transcript_format::text;
  std::string hotwords_file;
  float hotword_weight = default_hotword_weight;
  bool use_lm = true;
  std::vector<std::string> labels;
  std::vector<std::string> files;
};

// Everything shared by the files of one run.
struct engine {
  std::shared_ptr<const moe::acoustic_model> model;
  std::optional<moe::arpa_lm> lm;
  moe::context_graph hotwords;
  dsp::fbank_computer fbank;
  moe::decoder_options decoder;  ///< [decoder], with frame_ms taken from the model
  moe::workspace ws;
};

std::vector<std::string> split_labels(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) out.push_back(part);
  return out;
}

// Hotwords file: one phrase per line, optionally followed by a weight ("acme corp 4.5");
// blank lines and lines starting with '#' are skipped.
result<std::vector<moe::hotword>> read_hotwords(const std::string& path, float default_weight) {
  std::ifstream in(path);
  if (!in) return fail(errc::io, "cannot open hotwords file " + path);
  std::vector<moe::hotword> out;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    float weight = default_weight;
    auto sp = line.find_last_of(" \t");
    if (sp != std::string::npos) {
      char* end = nullptr;
      const std::string tail = line.substr(sp + 1);
      float w = std::strtof(tail.c_str(), &end);
      if (end && *end == '\0' && !tail.empty()) {
        if (!(w >= 0)) return fail(errc::invalid_argument, path + ":" + std::to_string(line_no) + ": weight must be >= 0");
        weight = w;
        line.resize(sp);
      }
    }
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    out.push_back({line, weight});
  }
  return out;
}

result<transcript_segment> transcribe_segment(engine& e, std::span<const float> samples,
                                              int64_t start_sample) {
  auto feats = e.fbank.compute(samples);
  const auto n_frames = static_cast<int64_t>(feats.size() / e.fbank.num_mels());
  auto fwd = moe::forward_offline(*e.model, feats.data(), n_frames, {}, &e.ws);
  if (!fwd) return tl::unexpected(fwd.error());
  auto dec = moe::beam_search_decoder::create(e.model->tokens(), e.decoder, e.lm ? &*e.lm : nullptr, e.hotwords);
  if (!dec) return tl::unexpected(dec.error());
  if (fwd->n_frames > 0)
    if (auto r = dec->accept(fwd->logits, static_cast<int32_t>(fwd->n_frames)); !r) return tl::unexpected(r.error());
  auto res = dec->finalize();
  const int64_t offset_ms = start_sample / samples_per_ms;
  transcript_segment seg{offset_ms, offset_ms + static_cast<int64_t>(samples.size()) / samples_per_ms, res.text, {}};
  for (auto w : res.words) {
    w.start_ms += offset_ms;
    w.end_ms += offset_ms;
    seg.words.push_back(std::move(w));
  }
  return seg;
}

result<file_transcript> transcribe_file(engine& e, const config::sluice_config& cfg, const transcribe_args& args,
                                        const std::string& path) {
  auto speech = dsp::prepare_file(path, cfg);
  if (!speech) return tl::unexpected(speech.error());
  file_transcript t{path, speech->duration_s, speech->input_sample_rate, {}};
  const bool progress = speech->duration_s >= progress_min_duration_s;
  const auto n_ch = speech->channels.size();
  for (std::size_t ch = 0; ch < n_ch; ++ch) {
    const auto& samples = speech->channels[ch].samples;
    const auto& segments = speech->channels[ch].segments;
    channel_transcript ct{static_cast<int>(ch), "", {}};
    if (ch < args.labels.size()) ct.label = args.labels[ch];
    else if (n_ch == 2) ct.label = ch == 0 ? "agent" : "customer";
    else if (n_ch > 2) ct.label = "channel " + std::to_string(ch);
    for (const auto& s : segments) {
      auto seg = transcribe_segment(e, std::span<const float>(samples).subspan(
                                              static_cast<std::size_t>(s.start_sample),
                                              static_cast<std::size_t>(s.end_sample - s.start_sample)),
                                    s.start_sample);
      if (!seg) return tl::unexpected(seg.error());
      if (!seg->text.empty()) ct.segments.push_back(std::move(*seg));
      if (progress)
        std::fprintf(stderr, "\r%s: channel %zu/%zu: %.1f / %.1f s", path.c_str(), ch + 1, n_ch,
                     static_cast<double>(s.end_sample) / dsp::model_sample_rate, t.duration_s);
    }
    if (progress) std::fputc('\n', stderr);
    t.channels.push_back(std::move(ct));
  }
  return t;
}

result<transcribe_args> parse_args(std::vector<std::string> args) {
  transcribe_args out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> result<std::string> {
      if (i + 1 >= args.size()) return fail(errc::invalid_argument, a + " needs a value");
      return args[++i];
    };
    if (a == "--format") {
      auto v = value();
      if (!v) return tl::unexpected(v.error());
      if (!parse_transcript_format(*v, out.format))
        return fail(errc::invalid_argument, "--format " + *v + ": choose text, json, srt or vtt");
    } else if (a == "--hotwords") {
      auto v = value();
      if (!v) return tl::unexpected(v.error());
      out.hotwords_file = *v;
    } else if (a == "--hotword-weight") {
      auto v = value();
      if (!v) return tl::unexpected(v.error());
      char* end = nullptr;
      out.hotword_weight = std::strtof(v->c_str(), &end);
      if (v->empty() || *end != '\0' || !(out.hotword_weight >= 0) || out.hotword_weight > max_hotword_weight)
        return fail(errc::invalid_argument, "--hotword-weight " + *v + ": give a number from 0 to " +
                                                std::to_string(static_cast<int>(max_hotword_weight)));
    } else if (a == "--labels") {
      auto v = value();
      if (!v) return tl::unexpected(v.error());
      out.labels = split_labels(*v);
    } else if (a == "--no-lm") {
      out.use_lm = false;
    } else if (a.rfind("--", 0) == 0) {
      return fail(errc::invalid_argument, "unknown option " + a);
    } else {
      out.files.push_back(a);
    }
  }
  if (out.files.empty()) return fail(errc::invalid_argument, "give one or more audio files");
  return out;
}

result<engine> make_engine(const config::sluice_config& cfg, const transcribe_args& args) {
  auto model = moe::load_model(cfg.model.dir);
  if (!model) return tl::unexpected(model.error());
  // The model's own feature settings, not [fbank]: features must be the ones it was trained on.
  auto fbank = dsp::fbank_computer::create(moe::fbank_config_of((*model)->manifest().features), dsp::model_sample_rate);
  if (!fbank) return tl::unexpected(fbank.error());
  engine e{std::move(*model), std::nullopt, {}, std::move(*fbank), cfg.decoder, {}};
  // Word times: one decoder frame is the model's fbank shift times its subsampling.
  e.decoder.frame_ms = e.model->manifest().features.frame_shift_ms * e.model->arch().subsampling;
  const auto lm_path = std::filesystem::path(cfg.model.dir) / lm_file_name;
  if (args.use_lm && std::filesystem::exists(lm_path)) {
    auto lm = moe::arpa_lm::load(lm_path.string());
    if (!lm) return tl::unexpected(lm.error());
    e.lm = std::move(*lm);
    spdlog::info("word LM {}: order {}", lm_path.string(), e.lm->order());
  }
  if (!args.hotwords_file.empty()) {
    auto hw = read_hotwords(args.hotwords_file, args.hotword_weight);
    if (!hw) return tl::unexpected(hw.error());
    auto graph = moe::context_graph::build(*hw, e.model->tokens());
    if (!graph) return tl::unexpected(graph.error());
    e.hotwords = std::move(*graph);
  }
  return e;
}

}  // namespace

int cmd_transcribe(invocation& inv) {
  auto args = parse_args(inv.args);
  if (!args) {
    std::fprintf(stderr, "sluice transcribe: %s\n", args.error().message.c_str());
    return exit_usage;
  }
  auto e = make_engine(inv.cfg, *args);
  if (!e) {
    std::fprintf(stderr, "sluice transcribe: %s\n", e.error().message.c_str());
    return exit_failure;
  }
  int status = exit_ok;
  for (const auto& path : args->files) {
    auto t = transcribe_file(*e, inv.cfg, *args, path);
    if (!t) {
      std::fprintf(stderr, "sluice transcribe: %s: %s (%s)\n", path.c_str(), t.error().message.c_str(),
                   to_string(t.error().code));
      status = exit_failure;
      continue;
    }
    std::fputs(render(*t, args->format).c_str(), stdout);
  }
  return status;
}

}  // namespace sluice::cli
