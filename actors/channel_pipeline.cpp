#include "actors/channel_pipeline.hpp"

#include <cstdlib>
#include <sstream>

#include <spdlog/spdlog.h>

namespace sluice::actors {

namespace {
constexpr float default_hotword_weight = 3.0f;

struct hotword_build {
  moe::context_graph graph;
  std::shared_ptr<const moe::word_lexicon> lexicon;
};

// The hotword graph of `hw` and, for the lexicon decoder, the vocabulary its words (and `extra`
// words: a tenant's lexicon additions) add.
result<hotword_build> build_hotwords(const engine_resources& res, const std::vector<moe::hotword>& hw,
                                     const std::vector<std::string>& extra) {
  auto graph = moe::context_graph::build(hw, res.model->tokens());
  if (!graph) return tl::unexpected(graph.error());
  std::shared_ptr<const moe::word_lexicon> lexicon;
  if (res.decoder_mode == moe::decoder_mode::lexicon && (!hw.empty() || !extra.empty())) {
    std::vector<std::string> words = extra;
    for (const auto& h : hw) {
      std::istringstream in(h.phrase);
      for (std::string w; in >> w;) words.push_back(w);
    }
    lexicon = std::make_shared<const moe::word_lexicon>(
        moe::word_lexicon::build(res.model->tokens(), res.lm.get(), words, /*with_lm_unigrams=*/false));
  }
  return hotword_build{std::move(*graph), std::move(lexicon)};
}

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

result<std::vector<moe::hotword>> parse_hotwords(const std::vector<std::string>& lines, float default_weight) {
  std::vector<moe::hotword> out;
  for (std::string line : lines) {
    float weight = default_weight;
    const auto sp = line.find_last_of(" \t");
    if (sp != std::string::npos) {
      const std::string tail = line.substr(sp + 1);
      char* end = nullptr;
      const float w = std::strtof(tail.c_str(), &end);
      if (!tail.empty() && end && *end == '\0') {
        if (!(w >= 0) || w > moe::context_graph::max_weight)
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
  auto built = build_hotwords(res, *hw, {});
  if (!built) return tl::unexpected(built.error());
  channel_pipeline p{codec,          req.sample_rate, std::move(*rs),          std::move(dn),
                     std::move(*ep), std::move(opus), std::move(built->graph), std::move(built->lexicon),
                     {}};
  p.request_hotwords = std::move(*hw);
  p.tenant = req.tenant;
  p.post.redact = default_rules(res);
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
  auto all = request_hotwords;
  std::vector<std::string> extra;
  if (profile) {
    auto mine = parse_hotwords(profile->hotwords, default_hotword_weight);
    if (mine) {
      all.insert(all.end(), mine->begin(), mine->end());
      extra = profile->lexicon;
    } else {
      spdlog::warn("tenant {}: hotwords not used: {}", tenant, mine.error().message);
    }
  }
  auto built = build_hotwords(res, all, extra);
  if (!built) {
    spdlog::warn("tenant {}: hotwords not used: {}", tenant, built.error().message);
    built = build_hotwords(res, request_hotwords, {});
    if (!built) return true;  // the request's own hotwords built at create(): cannot fail now
  }
  hotwords = std::move(built->graph);
  hotword_lexicon = std::move(built->lexicon);
  return true;
}

result<moe::ctc_decoder> channel_pipeline::make_decoder(const engine_resources& res) const {
  return moe::ctc_decoder::create(res.decoder_mode, res.model->tokens(), res.decoder, res.lm.get(),
                                  moe::lexicon_view(res.lexicon.get(), hotword_lexicon.get()), hotwords);
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
