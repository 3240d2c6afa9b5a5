#include "net/sip/rtp_audio_decoder.hpp"

// Before spandsp's headers, which define lrint and friends as macros for C.
#include <algorithm>
#include <cmath>

#include <opus/opus.h>

extern "C" {
#include <spandsp/telephony.h>
#include <spandsp/g722.h>
#include <spandsp/plc.h>
}

#include "dsp/g711.hpp"

namespace sluice::net::sip {

namespace {
constexpr int g722_bit_rate = 64000;
// Opus: the longest packet is 120 ms; its concealment takes multiples of 2.5 ms, at most 120 ms.
constexpr int opus_max_packet_ms = 120;
constexpr int opus_plc_step_per_s = 400;  // 2.5 ms
// RFC 3389 3.1: the level byte is the noise's level in -dBov, 0-127; 0 dBov is the RMS of a
// full-scale square wave (32767 for 16-bit PCM).
constexpr double full_scale = 32767.0;
constexpr uint8_t max_cn_level = 127;
// A uniform distribution on [-a, a] has RMS a / sqrt(3).
const double uniform_peak_per_rms = std::sqrt(3.0);
}

struct rtp_audio_decoder::spandsp_state {
  plc_state_t* plc = nullptr;
  g722_decode_state_t* g722 = nullptr;
  OpusDecoder* opus = nullptr;
  ~spandsp_state() {
    if (plc) plc_free(plc);
    if (g722) g722_decode_free(g722);
    if (opus) opus_decoder_destroy(opus);
  }
};

uint32_t rtp_packet_duration(const codec_choice& codec, std::span<const uint8_t> payload) {
  if (codec.codec != audio_codec::opus) return static_cast<uint32_t>(payload.size());
  const int n = opus_packet_get_nb_samples(payload.data(), static_cast<opus_int32>(payload.size()), codec.clock_rate);
  return n > 0 ? static_cast<uint32_t>(n) : 0u;
}

rtp_audio_decoder::rtp_audio_decoder(codec_choice codec) : codec_(codec), dsp_(std::make_unique<spandsp_state>()) {
  dsp_->plc = plc_init(nullptr);
  if (codec_.codec == audio_codec::g722) dsp_->g722 = g722_decode_init(nullptr, g722_bit_rate, 0);
  if (codec_.codec == audio_codec::opus) {
    int err = 0;
    dsp_->opus = opus_decoder_create(codec_.sample_rate, 1, &err);
    if (err != OPUS_OK) dsp_->opus = nullptr;
  }
}

rtp_audio_decoder::~rtp_audio_decoder() = default;

void rtp_audio_decoder::decode(const playout_item& item, std::vector<int16_t>& out) {
  // Timestamp units to samples: equal for G.711; G.722 samples at twice its RTP clock.
  const auto samples_of = [&](uint32_t units) {
    return static_cast<std::size_t>(static_cast<uint64_t>(units) * codec_.sample_rate / codec_.clock_rate);
  };
  const std::size_t start = out.size();
  plc_state_t* plc = dsp_->plc;
  g722_decode_state_t* g722 = dsp_->g722;
  switch (item.what) {
    case playout_item::kind::packet: {
      if (codec_.comfort_noise_pt >= 0 && item.payload_type == codec_.comfort_noise_pt) {
        // The pause that follows is filled at this level; a CN packet without one keeps the last.
        if (!item.payload.empty()) {
          const double dbov = -static_cast<double>(std::min(item.payload[0], max_cn_level));
          noise_amplitude_ = full_scale * std::pow(10.0, dbov / 20) * uniform_peak_per_rms;
        }
        return;
      }
      if (item.payload_type != codec_.payload_type || item.payload.empty()) return;
      noise_amplitude_ = 0;
      if (codec_.codec == audio_codec::opus) {
        // Opus conceals with its own decoder state, not spandsp's.
        if (!dsp_->opus) return;
        const int max_samples = codec_.sample_rate * opus_max_packet_ms / 1000;
        out.resize(start + static_cast<std::size_t>(max_samples));
        const int n = opus_decode(dsp_->opus, item.payload.data(), static_cast<opus_int32>(item.payload.size()),
                                  out.data() + start, max_samples, 0);
        out.resize(start + static_cast<std::size_t>(n > 0 ? n : 0));
        return;
      }
      if (codec_.codec == audio_codec::g722) {
        if (!g722) return;
        out.resize(start + item.payload.size() * 2);
        const int n = g722_decode(g722, out.data() + start, item.payload.data(), static_cast<int>(item.payload.size()));
        out.resize(start + static_cast<std::size_t>(n > 0 ? n : 0));
      } else {
        out.reserve(start + item.payload.size());
        const bool mu = codec_.codec == audio_codec::pcmu;
        for (uint8_t b : item.payload) out.push_back(mu ? dsp::mulaw_to_linear(b) : dsp::alaw_to_linear(b));
      }
      // The concealment learns the signal it may have to continue.
      if (plc && out.size() > start) plc_rx(plc, out.data() + start, static_cast<int>(out.size() - start));
      return;
    }
    case playout_item::kind::lost: {
      const std::size_t n = samples_of(item.duration);
      out.resize(start + n, 0);
      if (dsp_->opus) {
        // Opus's concealment, in steps of 2.5 ms up to 120 ms; a remainder stays silent.
        const std::size_t step = static_cast<std::size_t>(codec_.sample_rate / opus_plc_step_per_s);
        const std::size_t most = static_cast<std::size_t>(codec_.sample_rate * opus_max_packet_ms / 1000);
        for (std::size_t done = 0; done + step <= n;) {
          const std::size_t chunk = std::min(most, (n - done) / step * step);
          const int got = opus_decode(dsp_->opus, nullptr, 0, out.data() + start + done, static_cast<int>(chunk), 0);
          if (got <= 0) break;
          done += static_cast<std::size_t>(got);
        }
        concealed_ += n;
        return;
      }
      if (plc && n > 0) plc_fillin(plc, out.data() + start, static_cast<int>(n));
      concealed_ += n;
      return;
    }
    case playout_item::kind::silence: {
      const std::size_t n = samples_of(item.duration);
      out.resize(start + n, 0);
      if (noise_amplitude_ > 0) {
        // A 32-bit LCG (Numerical Recipes' constants): white enough for a pause, and the same
        // every run.
        for (std::size_t i = start; i < out.size(); ++i) {
          noise_state_ = noise_state_ * 1664525u + 1013904223u;
          const double u = static_cast<double>(noise_state_) / 4294967296.0 * 2 - 1;
          out[i] = static_cast<int16_t>(std::lround(u * noise_amplitude_));
        }
        comfort_noise_ += n;
      }
      // A loss right after a pause continues the pause, not the speech before it.
      if (plc && n > 0) plc_rx(plc, out.data() + start, static_cast<int>(n));
      return;
    }
  }
}

}  // namespace sluice::net::sip
