#include "moe/recognizer/recognizer_resources.hpp"

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <spdlog/spdlog.h>

#include "config/cache_dir.hpp"
#include "kernels/cpu/bf16_gemm.hpp"
#include "moe/bf16_weights.hpp"
#include "moe/model_manifest.hpp"

namespace sluice::moe {

namespace {
constexpr const char* lm_file_name = "lm.arpa";
constexpr const char* lexicon_file_name = "lexicon.txt";

// decoder.lexicon_file, relative to the model directory; else <model dir>/lexicon.txt if present.
std::string lexicon_path(const config::sluice_config& cfg) {
  const std::filesystem::path dir(cfg.model.dir);
  if (!cfg.decoder.lexicon_file.empty()) {
    const std::filesystem::path p(cfg.decoder.lexicon_file);
    return (p.is_absolute() ? p : dir / p).string();
  }
  const auto fallback = dir / lexicon_file_name;
  return std::filesystem::exists(fallback) ? fallback.string() : std::string{};
}
}  // namespace

result<std::vector<hotword>> parse_hotwords(const std::vector<std::string>& lines, float default_weight) {
  std::vector<hotword> out;
  for (std::string line : lines) {
    float weight = default_weight;
    const auto sp = line.find_last_of(" \t");
    if (sp != std::string::npos) {
      const std::string tail = line.substr(sp + 1);
      char* end = nullptr;
      const float w = std::strtof(tail.c_str(), &end);
      if (!tail.empty() && end && *end == '\0') {
        if (!(w >= 0) || w > context_graph::max_weight)
          return fail(errc::invalid_argument, "hotword \"" + line + "\": weight must be 0 .. 100");
        weight = w;
        line.resize(sp);
      }
    }
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    out.push_back({line, weight});
  }
  return out;
}

result<std::shared_ptr<const arpa_lm>> recognizer_resources::load_lm(const config::sluice_config& cfg, bool use_lm) {
  const auto lm_path = std::filesystem::path(cfg.model.dir) / lm_file_name;
  if (!use_lm || !std::filesystem::exists(lm_path)) return std::shared_ptr<const arpa_lm>();
  arpa_lm::cache_info cache;
  auto loaded = arpa_lm::load_cached(lm_path.string(), cfg.model.lm_cache ? config::user_cache_dir() : std::string(),
                                     {}, &cache);
  if (!loaded) return tl::unexpected(loaded.error());
  if (cache.hit) spdlog::info("word LM: {} read from its parsed copy {}", lm_path.string(), cache.file);
  else if (!cache.file.empty() && std::filesystem::exists(cache.file))
    spdlog::info("word LM: {} parsed; its parsed copy kept as {} for later starts", lm_path.string(), cache.file);
  return std::make_shared<const arpa_lm>(std::move(*loaded));
}

result<std::shared_ptr<const recognizer_resources>> recognizer_resources::create(
    const config::sluice_config& cfg, std::shared_ptr<const acoustic_model> model, bool use_lm) {
  if (!model) return fail(errc::invalid_argument, "recognizer: no model");
  auto lm = load_lm(cfg, use_lm);
  if (!lm) return tl::unexpected(lm.error());
  return create_with_lm(cfg, std::move(model), std::move(*lm));
}

result<std::shared_ptr<const recognizer_resources>> recognizer_resources::create_with_lm(
    const config::sluice_config& cfg, std::shared_ptr<const acoustic_model> model, std::shared_ptr<const arpa_lm> lm) {
  if (!model) return fail(errc::invalid_argument, "recognizer: no model");
  const auto& arch = model->arch();
  const std::string lexicon_file = lexicon_path(cfg);
  auto mode = resolve_mode(cfg.decoder.mode, lm || !lexicon_file.empty());
  if (!mode) return tl::unexpected(mode.error());
  std::shared_ptr<const word_lexicon> lexicon;
  if (*mode == decoder_mode::lexicon) {
    std::vector<std::string> words;
    if (!lexicon_file.empty()) {
      auto read = word_lexicon::read_words(lexicon_file);
      if (!read) return tl::unexpected(read.error());
      words = std::move(*read);
    }
    lexicon = std::make_shared<const word_lexicon>(word_lexicon::build(model->tokens(), lm.get(), words));
  }
  auto res = std::make_shared<recognizer_resources>();
  // bf16 on the host's kernels (CPU lanes, the recognizer core, expert actors); device lanes set
  // their backend's math themselves (actors/batcher_actor.cpp), so only CPU lanes need the
  // instructions.
  if (cfg.model.math == "bf16") {
    if (kernels::cpu::bf16_supported()) {
      res->compute.bf16 = bf16_weights::build(model);
      spdlog::info("model math: bf16 products, f32 accumulation ({} weight views packed, {:.1f} MB)",
                   res->compute.bf16->views(), static_cast<double>(res->compute.bf16->bytes()) / 1e6);
    } else if (cfg.engine.lane_backend == config::lane_backend::cpu) {
      return fail(errc::invalid_argument,
                  "model.math = \"bf16\" needs a CPU with AVX-512 BF16, and this one has none; use \"f32\"");
    } else {
      spdlog::info("model math: bf16 on the device lanes; host products stay f32 (no AVX-512 BF16 here)");
    }
  }
  res->window = attention_window{arch.chunk_frames, arch.left_chunks};
  res->decoder = cfg.decoder;
  // Word times: one decoder frame is the model's fbank shift times its subsampling.
  res->decoder.frame_ms = model->manifest().features.frame_shift_ms * arch.subsampling;
  res->mode = *mode;
  res->lm = std::move(lm);
  res->lexicon = std::move(lexicon);
  res->model = std::move(model);
  return std::shared_ptr<const recognizer_resources>(std::move(res));
}

result<prepared_stream> recognizer_resources::prepare(const stream_config& config) const {
  prepared_stream out;
  out.decoder = config.decoder.value_or(decoder);
  out.decoder.frame_ms = decoder.frame_ms;
  if (auto ok = validate(out.decoder); !ok) return tl::unexpected(ok.error());
  auto graph = context_graph::build(config.hotwords, model->tokens());
  if (!graph) return tl::unexpected(graph.error());
  out.hotwords = std::move(*graph);
  if (mode == decoder_mode::lexicon && (!config.hotwords.empty() || !config.extra_words.empty())) {
    std::vector<std::string> words = config.extra_words;
    for (const auto& h : config.hotwords) {
      std::istringstream in(h.phrase);
      for (std::string w; in >> w;) words.push_back(w);
    }
    out.hotword_lexicon = std::make_shared<const word_lexicon>(
        word_lexicon::build(model->tokens(), lm.get(), words, /*with_lm_unigrams=*/false));
  }
  return out;
}

result<ctc_decoder> recognizer_resources::make_decoder(const prepared_stream& stream) const {
  return ctc_decoder::create(mode, model->tokens(), stream.decoder, lm.get(),
                             lexicon_view(lexicon.get(), stream.hotword_lexicon.get()), stream.hotwords);
}

}  // namespace sluice::moe
