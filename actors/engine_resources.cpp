#include "actors/engine_resources.hpp"

#include <algorithm>

#include "actors/punct_hook.hpp"
#include "kernels/device.hpp"

#include <filesystem>
#include <future>

#include <spdlog/spdlog.h>

#include "moe/model_manifest.hpp"

namespace sluice::actors {

namespace {

// [postproc]: the ITN grammar and the punctuation model; null when disabled.
result<std::shared_ptr<const moe::postproc::postprocessor>> make_postproc(const config::sluice_config& cfg) {
  if (!cfg.postproc.enabled) return std::shared_ptr<const moe::postproc::postprocessor>();
  auto grammar = cfg.postproc.itn_grammar.empty()
                     ? moe::postproc::itn_grammar::parse(moe::postproc::builtin_itn_grammar(), "builtin en_itn.grammar")
                     : moe::postproc::itn_grammar::load(cfg.postproc.itn_grammar);
  if (!grammar) return tl::unexpected(grammar.error());
  std::shared_ptr<const moe::postproc::punctuation_hook> punct;
  const auto& dir = cfg.postproc.punct_model;
  // The default directory may simply not be there (a binary run outside the checkout): the
  // rules then, said once. A directory someone named must be there and load.
  const bool default_missing = dir == config::postproc_config::default_punct_model && !std::filesystem::exists(dir);
  if (default_missing) {
    spdlog::warn("postproc: no punctuation model at {} (relative to {}): punctuation and casing by rules; set "
                 "postproc.punct_model to the model's directory, or to \"\" for the rules without this warning",
                 dir, std::filesystem::current_path().string());
  } else if (!dir.empty()) {
    auto model = moe::punct::punctuator::load(dir);
    if (!model)
      return fail(errc::invalid_config, "postproc.punct_model = \"" + dir + "\": " + model.error().message);
    punct = std::make_shared<model_punctuation>(std::make_shared<const moe::punct::punctuator>(std::move(*model)));
  }
  return std::make_shared<const moe::postproc::postprocessor>(
      std::make_shared<const moe::postproc::itn_grammar>(std::move(*grammar)), std::move(punct));
}

using lm_result = result<std::shared_ptr<const moe::arpa_lm>>;
using postproc_result = result<std::shared_ptr<const moe::postproc::postprocessor>>;

// create() and load() once the LM and post-processing are read (their errors are reported here,
// in create()'s order: configuration and placement first, then the LM, then post-processing).
result<std::shared_ptr<const engine_resources>> assemble(const config::sluice_config& cfg,
                                                         std::shared_ptr<const moe::acoustic_model> model,
                                                         lm_result lm, postproc_result postproc) {
  if (!model) return fail(errc::invalid_argument, "engine: no model");
  const auto& arch = model->arch();
  if (cfg.engine.expert_shards > arch.n_routed)
    return fail(errc::invalid_config, "engine.expert_shards = " + std::to_string(cfg.engine.expert_shards) +
                                          " is more than the model's " + std::to_string(arch.n_routed) +
                                          " routed experts");
  // Device lanes: their streams keep bounded caches on the device (a bounded attention window),
  // and on a GPU one must be usable now (lanes would otherwise fall back to their CPU forward,
  // silently slower than configured).
  if (cfg.engine.lanes != 0 && cfg.engine.lane_backend != config::lane_backend::cpu) {
    if (arch.chunk_frames <= 0 || arch.left_chunks < 0)
      return fail(errc::invalid_config, "engine.lane_backend = \"" + std::string(config::enum_name(cfg.engine.lane_backend)) +
                                            "\" needs a model with a bounded attention window (this one: chunk_frames " +
                                            std::to_string(arch.chunk_frames) + ", left_chunks " +
                                            std::to_string(arch.left_chunks) + ")");
    if (cfg.engine.lane_backend == config::lane_backend::cuda)
      if (auto gpus = kernels::cuda_devices(); !gpus)
        return fail(errc::invalid_config, "engine.lane_backend = \"cuda\": " + gpus.error().message);
  }
  auto placement = moe::expert_placement::contiguous(arch, cfg.engine.expert_shards);
  if (!placement) return tl::unexpected(placement.error());
  auto fbank = dsp::fbank_computer::create(moe::fbank_config_of(model->manifest().features), dsp::model_sample_rate);
  if (!fbank) return tl::unexpected(fbank.error());
  if (!lm) return tl::unexpected(lm.error());
  auto rec = moe::recognizer_resources::create_with_lm(cfg, model, std::move(*lm));
  if (!rec) return tl::unexpected(rec.error());
  const auto& r = **rec;
  auto res = std::make_shared<engine_resources>(engine_resources{
      cfg, model, std::move(*placement), std::make_shared<const dsp::fbank_computer>(std::move(*fbank)), r.lm,
      r.decoder, r.mode, r.lexicon, r.window, r.compute, *rec});
  if (!postproc) return tl::unexpected(postproc.error());
  res->postproc = std::move(*postproc);
  if (!cfg.postproc.tenants_dir.empty() && !std::filesystem::is_directory(cfg.postproc.tenants_dir))
    return fail(errc::invalid_config, "postproc.tenants_dir = \"" + cfg.postproc.tenants_dir + "\" is not a directory");
  res->tenants = std::make_shared<moe::postproc::tenant_store>(cfg.postproc.tenants_dir);
  const auto report = res->tenants->reload();
  for (const auto& e : report.errors) spdlog::error("tenants: {}", e.message);
  if (!report.loaded.empty()) spdlog::info("tenants: {} loaded from {}", report.loaded.size(), cfg.postproc.tenants_dir);
  return std::shared_ptr<const engine_resources>(std::move(res));
}

}  // namespace

result<std::shared_ptr<const engine_resources>> engine_resources::create(
    const config::sluice_config& cfg, std::shared_ptr<const moe::acoustic_model> model, bool use_lm) {
  if (!model) return fail(errc::invalid_argument, "engine: no model");
  return assemble(cfg, std::move(model), moe::recognizer_resources::load_lm(cfg, use_lm), make_postproc(cfg));
}

result<std::shared_ptr<const engine_resources>> engine_resources::load(const config::sluice_config& cfg, bool use_lm) {
  // The three loads read different files and share nothing: the LM and post-processing on
  // their own threads while this one reads the model (the futures are joined before any
  // return, by get() or by their destructors).
  auto lm = std::async(std::launch::async, [&cfg, use_lm] { return moe::recognizer_resources::load_lm(cfg, use_lm); });
  auto postproc = std::async(std::launch::async, [&cfg] { return make_postproc(cfg); });
  auto model = moe::load_model(cfg.model.dir);
  lm_result lm_read = lm.get();
  postproc_result postproc_read = postproc.get();
  if (!model) return tl::unexpected(model.error());
  return assemble(cfg, std::move(*model), std::move(lm_read), std::move(postproc_read));
}

moe::step_bounds engine_resources::largest_step() const {
  const int64_t chunk = window.chunk_frames, budget = cfg.engine.token_budget;
  // stream_state::step_frames: at most max_chunks_per_step chunks; without chunks, everything
  // ready, which only the budget bounds (a longer utterance grows the buffers past it).
  const int64_t stream = chunk > 0 ? int64_t{cfg.engine.max_chunks_per_step} * chunk : budget;
  return moe::step_bounds{std::max(budget, stream), stream, placement.n_shards() + 1};
}

int64_t engine_resources::largest_block_pairs() const { return largest_step().tokens * model->arch().top_k; }

}  // namespace sluice::actors
