#include "actors/engine_resources.hpp"

#include "moe/model_manifest.hpp"

namespace sluice::actors {

result<std::shared_ptr<const engine_resources>> engine_resources::create(
    const config::sluice_config& cfg, std::shared_ptr<const moe::acoustic_model> model, bool use_lm) {
  if (!model) return fail(errc::invalid_argument, "engine: no model");
  const auto& arch = model->arch();
  if (cfg.engine.expert_shards > arch.n_routed)
    return fail(errc::invalid_config, "engine.expert_shards = " + std::to_string(cfg.engine.expert_shards) +
                                          " is more than the model's " + std::to_string(arch.n_routed) +
                                          " routed experts");
  auto placement = moe::expert_placement::contiguous(arch, cfg.engine.expert_shards);
  if (!placement) return tl::unexpected(placement.error());
  auto fbank = dsp::fbank_computer::create(moe::fbank_config_of(model->manifest().features), dsp::model_sample_rate);
  if (!fbank) return tl::unexpected(fbank.error());
  auto rec = moe::recognizer_resources::create(cfg, model, use_lm);
  if (!rec) return tl::unexpected(rec.error());
  const auto& r = **rec;
  return std::shared_ptr<const engine_resources>(std::make_shared<engine_resources>(engine_resources{
      cfg, model, std::move(*placement), std::make_shared<const dsp::fbank_computer>(std::move(*fbank)), r.lm,
      r.decoder, r.mode, r.lexicon, r.window, r.compute, *rec}));
}

}  // namespace sluice::actors
