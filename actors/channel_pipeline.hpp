#pragma once
/// The per-channel signal path a channel_actor runs, built (and checked) before the actor is
/// spawned so that a bad request is refused with its reason: decode (PCM16, G.711, Opus, or f32
/// samples) -> resample to 16 kHz -> optional denoise -> VAD/endpoint -> streaming fbank, plus
/// the channel's hotword graph for its decoders. Plain synchronous code; one per channel.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/engine_resources.hpp"
#include "actors/messages.hpp"
#include "config/error.hpp"
#include "dsp/denoiser.hpp"
#include "dsp/endpointer.hpp"
#include "dsp/opus_decoder.hpp"
#include "dsp/pcm.hpp"
#include "dsp/resampler.hpp"
#include "moe/decoder/context_graph.hpp"
#include "moe/decoder/word_lexicon.hpp"
#include "moe/postproc/postprocessor.hpp"
#include "moe/recognizer/recognizer_resources.hpp"

namespace sluice::actors {

enum class channel_codec { f32, pcm_s16le, mulaw, alaw, opus };

/// "f32", "pcm_s16le", "mulaw", "alaw", "opus"; false for anything else.
bool parse_codec(const std::string& s, channel_codec& out);

/// Hotword lines "phrase" or "phrase weight": moe::parse_hotwords.
using moe::parse_hotwords;

struct channel_pipeline {
  channel_codec codec = channel_codec::f32;
  int sample_rate = 0;
  dsp::resampler resample;
  std::optional<dsp::denoiser> denoise;
  dsp::endpointer endpoint;
  std::optional<dsp::opus_decoder> opus;
  /// The channel's hotwords (its request's and its tenant's) and decoder settings, used by each
  /// utterance; replaced by refresh_tenant() when the tenant's rules change.
  std::shared_ptr<const moe::prepared_stream> stream;
  std::vector<uint8_t> partial_sample;  ///< bytes of a sample split across packets (PCM codecs)
  /// The request's own hotwords; the tenant's are added to them in `stream`.
  std::vector<moe::hotword> request_hotwords;
  /// The request's own decoder settings (its number of alternatives), kept when the tenant's
  /// rules rebuild `stream`; nullopt: the engine's.
  std::optional<moe::decoder_options> request_decoder;
  std::string tenant;             ///< whose rules apply (empty: the engine defaults)
  bool offline = false;           ///< a file or upload channel (channel_request::offline)
  uint64_t tenant_version = 0;    ///< version of the tenant profile `stream` and `post` were built from (0: none)
  moe::postproc::postproc_options post;  ///< the tenant's redaction rules (or the engine default)
  /// What redaction carries from this channel's finals to its next results (a card read over
  /// several utterances): updated by each final, in utterance order.
  moe::postproc::redaction_carry redaction;

  /// errc::invalid_argument naming what is wrong (rate, codec, a hotword line).
  static result<channel_pipeline> create(const engine_resources& res, const channel_request& req);

  /// Encoded bytes -> f32 samples at sample_rate (errc::corrupt for a bad Opus packet). A PCM
  /// sample split across packets is completed by the next packet, as on a byte stream.
  result<std::vector<float>> decode(const std::vector<uint8_t>& bytes);
  /// Samples at sample_rate -> 16 kHz, denoised when configured.
  result<std::vector<float>> to_model_rate(const std::vector<float>& samples);
  /// What the resampler and denoiser still hold, at the end of the stream.
  result<std::vector<float>> flush();
  /// Called when an utterance starts: when the tenant's profile changed since the last build
  /// (a file reloaded, hotwords PUT through the API) the hotwords and redaction rules are rebuilt,
  /// so a live stream gets them at its next utterance. Returns true when something changed. A
  /// tenant's hotword that does not parse or has characters the model lacks is logged and the
  /// stream keeps its request's hotwords: a tenant's mistake never stops a stream.
  bool refresh_tenant(const engine_resources& res);
  /// A decoder for one utterance of this channel: the engine's mode, LM and vocabulary plus this
  /// channel's hotwords.
  result<moe::ctc_decoder> make_decoder(const engine_resources& res) const;
};

}  // namespace sluice::actors
