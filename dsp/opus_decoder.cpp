#include "dsp/opus_decoder.hpp"

#include <opus.h>

#include <algorithm>
#include <limits>
#include <string>

namespace sluice::dsp {
namespace {

// RFC 6716 §3.2.1: no packet lasts longer than 120 ms.
constexpr int max_packet_ms = 120;
constexpr int ms_per_second = 1000;

int samples_for_ms(int sample_rate, int ms) { return sample_rate / ms_per_second * ms; }

}  // namespace

void opus_decoder::state_deleter::operator()(OpusDecoder* state) const {
  opus_decoder_destroy(state);
}

opus_decoder::opus_decoder(std::unique_ptr<OpusDecoder, state_deleter> state, int sample_rate,
                           int channels)
    : state_(std::move(state)),
      sample_rate_(sample_rate),
      channels_(channels),
      interleaved_(
          static_cast<std::size_t>(samples_for_ms(sample_rate, max_packet_ms) * channels)) {}

result<opus_decoder> opus_decoder::create(int sample_rate, int channels) {
  if (std::find(std::begin(supported_rates), std::end(supported_rates), sample_rate) ==
      std::end(supported_rates))
    return fail(errc::invalid_argument, "opus: cannot decode to " + std::to_string(sample_rate) +
                                            " Hz; libopus decodes to 8000, 12000, 16000, 24000 "
                                            "or 48000 Hz");
  if (channels < 1 || channels > max_channels)
    return fail(errc::invalid_argument, "opus: " + std::to_string(channels) +
                                            " channels requested; a plain Opus stream has 1 or 2");
  int err = OPUS_OK;
  std::unique_ptr<OpusDecoder, state_deleter> state(
      opus_decoder_create(sample_rate, channels, &err));
  if (err != OPUS_OK || !state)
    return fail(errc::internal,
                std::string("opus: opus_decoder_create failed: ") + opus_strerror(err));
  return opus_decoder(std::move(state), sample_rate, channels);
}

result<audio> opus_decoder::decode(std::span<const uint8_t> packet) {
  if (packet.size() > static_cast<std::size_t>(std::numeric_limits<opus_int32>::max()))
    return fail(errc::corrupt, "opus: packet of " + std::to_string(packet.size()) +
                                   " bytes is far larger than any Opus packet");
  const int capacity = static_cast<int>(interleaved_.size()) / channels_;
  int frame_size = capacity;
  if (packet.empty()) {
    // Lost packet: libopus wants the exact duration to conceal, a multiple of 2.5 ms.
    opus_int32 last = 0;
    if (opus_decoder_ctl(state_.get(), OPUS_GET_LAST_PACKET_DURATION(&last)) != OPUS_OK ||
        last <= 0)
      last = samples_for_ms(sample_rate_, default_conceal_ms);
    frame_size = std::min(static_cast<int>(last), capacity);
  }
  const int n =
      opus_decode_float(state_.get(), packet.empty() ? nullptr : packet.data(),
                        static_cast<opus_int32>(packet.size()), interleaved_.data(), frame_size, 0);
  if (n < 0) {
    const errc code =
        (n == OPUS_INVALID_PACKET || n == OPUS_BUFFER_TOO_SMALL) ? errc::corrupt : errc::internal;
    return fail(code, "opus: cannot decode a " + std::to_string(packet.size()) +
                          "-byte packet: " + opus_strerror(n));
  }

  audio out;
  out.sample_rate = sample_rate_;
  out.channels.assign(static_cast<std::size_t>(channels_),
                      std::vector<float>(static_cast<std::size_t>(n)));
  const float* p = interleaved_.data();
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < channels_; ++c) out.channels[c][i] = std::clamp(*p++, -1.0f, 1.0f);
  return out;
}

int64_t opus_decoder::packet_samples(std::span<const uint8_t> packet, int sample_rate) {
  if (packet.empty() || sample_rate <= 0 || packet.size() > static_cast<std::size_t>(std::numeric_limits<int32_t>::max()))
    return 0;
  const int n = opus_packet_get_nb_samples(packet.data(), static_cast<opus_int32>(packet.size()), sample_rate);
  return n > 0 ? n : 0;
}

void opus_decoder::reset() { opus_decoder_ctl(state_.get(), OPUS_RESET_STATE); }

}  // namespace sluice::dsp
