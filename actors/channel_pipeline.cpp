#include "actors/channel_pipeline.hpp"

#include <spdlog/spdlog.h>

namespace sluice::actors {

namespace {
constexpr float default_hotword_weight = 3.0f;

moe::postproc::redaction_rules default_rules(const engine_resources& res) {
  moe::postproc::redaction_rules r;
  r.enabled = res.cfg.postproc.redact;
  return r;
}
}  // namespace

bool parse_codec(const std::string& s, channel_codec& out) {
  if (s == "f32") out = channel_codec::f32;
  else if (s == "pcm_s16le") out = channel_codec::pcm_s16le;
  else if (s == "mulaw") out = channel_codec::mulaw;
  else if (s == "alaw") out = channel_codec::alaw;
  else if (s == "opus") out = channel_codec::opus;
  else return false;
  return true;
}

result<channel_pipeline> channel_pipeline::create(const engine_resources& res, const channel_request& req) {
  channel_codec codec{};
  if (!parse_codec(req.codec, codec))
    return fail(errc::invalid_argument,
                "codec \"" + req.codec + "\" is not one of f32, pcm_s16le, mulaw, alaw, opus");
  if (auto ok = dsp::check_stream_shape("channel", req.sample_rate, 1); !ok) return tl::unexpected(ok.error());
  std::optional<dsp::opus_decoder> opus;
  if (codec == channel_codec::opus) {
    auto d = dsp::opus_decoder::create(req.sample_rate, 1);
    if (!d) return tl::unexpected(d.error());
    opus.emplace(std::move(*d));
  }
  auto quality = dsp::parse_resample_quality(res.cfg.audio.resample_quality);
  if (!quality) return tl::unexpected(quality.error());
  auto rs = dsp::resampler::create(req.sample_rate, dsp::model_sample_rate, *quality);
  if (!rs) return tl::unexpected(rs.error());
  std::optional<dsp::denoiser> dn;
  if (res.cfg.audio.denoise) {
    auto d = dsp::denoiser::create(res.cfg.audio.denoise_suppress_db);
    if (!d) return tl::unexpected(d.error());
    dn.emplace(std::move(*d));
  }
  auto ep = dsp::endpointer::create(res.cfg.vad, res.cfg.endpoint);
  if (!ep) return tl::unexpected(ep.error());
  auto hw = parse_hotwords(req.hotwords, default_hotword_weight);
  if (!hw) return tl::unexpected(hw.error());
  // A stream that asks for its own number of alternatives gets the engine's decoder settings
  // with that number.
  std::optional<moe::decoder_options> decoder;
  if (req.alternatives >= 0) {
    decoder = res.recognizer->decoder;
    decoder->alternatives = req.alternatives;
  }
  auto prepared = res.recognizer->prepare(moe::stream_config{*hw, decoder, {}});
  if (!prepared) return tl::unexpected(prepared.error());
  channel_pipeline p{codec,
                     req.sample_rate,
                     std::move(*rs),
                     std::move(dn),
                     std::move(*ep),
                     std::move(opus),
                     std::make_shared<const moe::prepared_stream>(std::move(*prepared)),
                     {}};
  p.request_hotwords = std::move(*hw);
  p.request_decoder = std::move(decoder);
  p.tenant = req.tenant;
  p.offline = req.offline;
  p.post.redact = default_rules(res);
  p.post.carry = {res.cfg.postproc.redact_carry_finals, res.cfg.postproc.redact_carry_ms};
  p.refresh_tenant(res);
  return p;
}

bool channel_pipeline::refresh_tenant(const engine_resources& res) {
  if (tenant.empty() || !res.tenants) return false;
  const auto profile = res.tenants->get(tenant);
  const uint64_t version = profile ? profile->version : 0;
  if (version == tenant_version) return false;
  tenant_version = version;
  post.redact = profile && profile->has_redaction ? profile->redaction : default_rules(res);
  moe::stream_config config{request_hotwords, request_decoder, {}};
  if (profile) {
    auto mine = parse_hotwords(profile->hotwords, default_hotword_weight);
    if (mine) {
      config.hotwords.insert(config.hotwords.end(), mine->begin(), mine->end());
      config.extra_words = profile->lexicon;
    } else {
      spdlog::warn("tenant {}: hotwords not used: {}", tenant, mine.error().message);
    }
  }
  auto prepared = res.recognizer->prepare(config);
  if (!prepared) {
    spdlog::warn("tenant {}: hotwords not used: {}", tenant, prepared.error().message);
    prepared = res.recognizer->prepare(moe::stream_config{request_hotwords, request_decoder, {}});
    if (!prepared) return true;  // the request's own hotwords were prepared at create(): cannot fail now
  }
  stream = std::make_shared<const moe::prepared_stream>(std::move(*prepared));
  return true;
}

result<moe::ctc_decoder> channel_pipeline::make_decoder(const engine_resources& res) const {
  return res.recognizer->make_decoder(*stream);
}

result<std::vector<float>> channel_pipeline::decode(const std::vector<uint8_t>& bytes) {
  switch (codec) {
    case channel_codec::opus: {
      auto a = opus->decode(bytes);
      if (!a) return tl::unexpected(a.error());
      return std::move(a->channels.front());
    }
    case channel_codec::f32:
    case channel_codec::pcm_s16le:
    case channel_codec::mulaw:
    case channel_codec::alaw: {
      dsp::raw_format f;
      f.sample_rate = sample_rate;
      f.channels = 1;
      f.encoding = codec == channel_codec::f32         ? dsp::sample_encoding::pcm_f32le
                   : codec == channel_codec::pcm_s16le ? dsp::sample_encoding::pcm_s16le
                   : codec == channel_codec::mulaw     ? dsp::sample_encoding::mulaw
                                                       : dsp::sample_encoding::alaw;
      const std::size_t width = dsp::bytes_per_sample(f.encoding);
      std::vector<uint8_t> whole = std::move(partial_sample);
      whole.insert(whole.end(), bytes.begin(), bytes.end());
      const std::size_t keep = whole.size() % width;
      partial_sample.assign(whole.end() - static_cast<std::ptrdiff_t>(keep), whole.end());
      whole.resize(whole.size() - keep);
      if (whole.empty()) return std::vector<float>{};
      auto a = dsp::decode_raw(whole, f);
      if (!a) return tl::unexpected(a.error());
      return std::move(a->channels.front());
    }
  }
  return fail(errc::invalid_argument, "unknown codec");
}

result<std::vector<float>> channel_pipeline::to_model_rate(const std::vector<float>& samples) {
  auto r = resample.process(samples);
  if (!r || !denoise) return r;
  return denoise->process(*r);
}

result<std::vector<float>> channel_pipeline::flush() {
  auto r = resample.flush();
  if (!r || !denoise) return r;
  auto a = denoise->process(*r);
  if (!a) return a;
  auto b = denoise->flush();
  if (!b) return b;
  a->insert(a->end(), b->begin(), b->end());
  return a;
}

}  // namespace sluice::actors
