#include "net/sip/rtp_audio_decoder.hpp"

extern "C" {
#include <spandsp/telephony.h>
#include <spandsp/g722.h>
#include <spandsp/plc.h>
}

#include "dsp/g711.hpp"

namespace sluice::net::sip {

namespace {
constexpr int g722_bit_rate = 64000;
}

struct rtp_audio_decoder::spandsp_state {
  plc_state_t* plc = nullptr;
  g722_decode_state_t* g722 = nullptr;
  ~spandsp_state() {
    if (plc) plc_free(plc);
    if (g722) g722_decode_free(g722);
  }
};

rtp_audio_decoder::rtp_audio_decoder(codec_choice codec) : codec_(codec), dsp_(std::make_unique<spandsp_state>()) {
  dsp_->plc = plc_init(nullptr);
  if (codec_.codec == audio_codec::g722) dsp_->g722 = g722_decode_init(nullptr, g722_bit_rate, 0);
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
      if (item.payload_type != codec_.payload_type || item.payload.empty()) return;
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
      if (plc && n > 0) plc_fillin(plc, out.data() + start, static_cast<int>(n));
      concealed_ += n;
      return;
    }
    case playout_item::kind::silence: {
      const std::size_t n = samples_of(item.duration);
      out.resize(start + n, 0);
      // A loss right after a pause continues the pause, not the speech before it.
      if (plc && n > 0) plc_rx(plc, out.data() + start, static_cast<int>(n));
      return;
    }
  }
}

}  // namespace sluice::net::sip
