#include "net/rtsp/rtp_audio_stream.hpp"

#include <random>

#include "net/sip/rtcp_packet.hpp"
#include "net/sip/rtp_packet.hpp"

namespace sluice::net::rtsp {

namespace {
constexpr std::size_t l16_bytes = 2;
}

rtp_audio_stream::rtp_audio_stream(const rtsp_media& media, sip::jitter_buffer_config jitter, sink out, int max_kbps)
    : media_(media), jitter_([&] {
        jitter.clock_rate = media.clock_rate;
        return jitter;
      }()),
      out_(std::move(out)),
      rtcp_(media.clock_rate),
      // An interleaved frame carries up to 64 KiB: a limit under 512 kbit/s must still pass one.
      rate_(sip::rate_limiter::kbps(max_kbps, 65536)),
      own_ssrc_(static_cast<uint32_t>(std::random_device{}())) {
  if (media_.codec != rtsp_codec::l16) decoder_ = std::make_unique<sip::rtp_audio_decoder>(sip_codec_of(media_));
}

void rtp_audio_stream::on_packet(std::span<const uint8_t> bytes, int64_t now_us) {
  const int64_t now_ms = now_us / 1000;
  if (!rate_.admit(bytes.size(), now_us)) {
    ++counters_.over_rate;
    return;
  }
  auto p = sip::parse_rtp(bytes);
  if (!p) {
    ++counters_.not_rtp;
    return;
  }
  if (p->payload_type != media_.payload_type) {
    ++counters_.other_payload;
    return;
  }
  ++counters_.packets;
  // Duration in timestamp units: one per L16 frame of `channels` samples; for the other codecs
  // what the SIP path counts (a G.711 or G.722 byte, Opus from its TOC byte).
  const auto duration = media_.codec == rtsp_codec::l16
                            ? static_cast<uint32_t>(p->payload.size() / (l16_bytes * static_cast<std::size_t>(media_.channels)))
                            : sip::rtp_packet_duration(decoder_->codec(), p->payload);
  rtcp_.on_rtp(p->ssrc, p->seq, p->timestamp, true, now_us);
  jitter_.push(*p, duration, now_ms);
  deliver(jitter_.pop(now_ms));
}

void rtp_audio_stream::on_rtcp(std::span<const uint8_t> bytes, int64_t now_us) {
  const auto c = sip::parse_rtcp(bytes);
  if (!c) {
    ++counters_.rtcp_invalid;
    return;
  }
  ++counters_.rtcp_received;
  if (c->sender) {
    ++counters_.sender_reports;
    rtcp_.on_sender_report(c->sender->ntp, now_us);
  }
}

std::vector<uint8_t> rtp_audio_stream::receiver_report(int64_t now_us, std::string_view cname, bool bye) {
  if (!rtcp_.has_source()) return {};
  const sip::rtcp_report_block blocks[] = {rtcp_.report(now_us)};
  return sip::render_receiver_report(own_ssrc_, blocks, cname, bye);
}

void rtp_audio_stream::tick(int64_t now_ms) { deliver(jitter_.pop(now_ms)); }

void rtp_audio_stream::flush() { deliver(jitter_.flush()); }

void rtp_audio_stream::decode_l16(const sip::playout_item& item, std::vector<int16_t>& pcm) const {
  const auto ch = static_cast<std::size_t>(media_.channels);
  if (item.what != sip::playout_item::kind::packet) {
    pcm.resize(pcm.size() + item.duration, 0);
    return;
  }
  const std::size_t frames = item.payload.size() / (l16_bytes * ch);
  for (std::size_t f = 0; f < frames; ++f) {
    int sum = 0;
    for (std::size_t c = 0; c < ch; ++c) {
      const auto* b = item.payload.data() + (f * ch + c) * l16_bytes;
      sum += static_cast<int16_t>(static_cast<uint16_t>((b[0] << 8) | b[1]));
    }
    pcm.push_back(static_cast<int16_t>(sum / static_cast<int>(ch)));
  }
}

void rtp_audio_stream::deliver(const std::vector<sip::playout_item>& items) {
  if (items.empty()) return;
  std::vector<int16_t> pcm;
  for (const auto& it : items) {
    const auto before = pcm.size();
    if (decoder_) decoder_->decode(it, pcm);
    else decode_l16(it, pcm);
    if (it.what == sip::playout_item::kind::lost) concealed_samples_ += pcm.size() - before;
  }
  if (pcm.empty() || !out_) return;
  std::vector<uint8_t> bytes(pcm.size() * 2);
  for (std::size_t i = 0; i < pcm.size(); ++i) {
    const auto v = static_cast<uint16_t>(pcm[i]);
    bytes[2 * i] = static_cast<uint8_t>(v & 0xff);
    bytes[2 * i + 1] = static_cast<uint8_t>(v >> 8);
  }
  out_(std::move(bytes));
}

nlohmann::json rtp_audio_stream::stats() const {
  const auto& j = jitter_.stats();
  return {{"codec", codec_name(media_.codec)},
          {"packets", counters_.packets},
          {"not_rtp", counters_.not_rtp},
          {"other_payload", counters_.other_payload},
          {"over_rate", counters_.over_rate},
          {"lost", j.lost},
          {"late", j.late},
          {"reordered", j.reordered},
          {"max_hold_ms", j.max_hold_ms},
          {"rtcp_sent", counters_.rtcp_sent},
          {"rtcp_received", counters_.rtcp_received},
          {"rtcp_invalid", counters_.rtcp_invalid},
          {"sender_reports", counters_.sender_reports},
          {"concealed_ms", media_.sample_rate > 0 ? concealed_samples_ * 1000 / media_.sample_rate : 0}};
}

}  // namespace sluice::net::rtsp
