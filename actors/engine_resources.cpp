#include "actors/engine_resources.hpp"

#include <filesystem>

#include "moe/model_manifest.hpp"

namespace sluice::actors {

namespace {
constexpr const char* lm_file_name = "lm.arpa";
}

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
  std::shared_ptr<const moe::arpa_lm> lm;
  const auto lm_path = std::filesystem::path(cfg.model.dir) / lm_file_name;
  if (use_lm && std::filesystem::exists(lm_path)) {
    auto loaded = moe::arpa_lm::load(lm_path.string());
    if (!loaded) return tl::unexpected(loaded.error());
    lm = std::make_shared<const moe::arpa_lm>(std::move(*loaded));
  }
  auto res = std::make_shared<engine_resources>(engine_resources{
      cfg, model, std::move(*placement), std::make_shared<const dsp::fbank_computer>(std::move(*fbank)), std::move(lm),
      cfg.decoder, moe::attention_window{arch.chunk_frames, arch.left_chunks}, {}});
  // Word times: one decoder frame is the model's fbank shift times its subsampling.
  res->decoder.frame_ms = model->manifest().features.frame_shift_ms * arch.subsampling;
  return std::shared_ptr<const engine_resources>(std::move(res));
}

}  // namespace sluice::actors
