#include "dsp/bounded_decode.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "dsp/ogg_opus.hpp"
#include "dsp/wav.hpp"

namespace sluice::dsp {
namespace {

// Input frames decoded and resampled at once: small enough that a piece costs little memory
// even with many channels, large enough that soxr's per-call overhead does not matter.
constexpr std::size_t piece_frames = 16384;

// Interleaved PCM or G.711 bytes (a WAV data chunk or a raw body), a piece at a time.
class pcm_pieces {
 public:
  pcm_pieces(std::span<const uint8_t> data, sample_encoding encoding, int channels)
      : data_(data), encoding_(encoding), channels_(channels),
        frame_bytes_(bytes_per_sample(encoding) * static_cast<std::size_t>(channels)) {}

  result<std::size_t> read(std::vector<std::vector<float>>& out) {
    const std::size_t left = data_.size() - pos_;
    if (left == 0) return std::size_t{0};
    const std::size_t n = std::min(left, piece_frames * frame_bytes_);
    auto planar = deinterleave(data_.subspan(pos_, n), encoding_, channels_);
    if (!planar) return tl::unexpected(planar.error());
    pos_ += n;
    out = std::move(*planar);
    return out.empty() ? std::size_t{0} : out[0].size();
  }

 private:
  std::span<const uint8_t> data_;
  sample_encoding encoding_;
  int channels_;
  std::size_t frame_bytes_;
  std::size_t pos_ = 0;
};

// Pulls pieces from `source` until it ends, resampling each channel as it goes.
template <class Source>
result<audio> resample_pieces(Source& source, const audio_info& info, std::size_t max_input_frames,
                              resample_quality quality, int output_rate) {
  const auto channels = static_cast<std::size_t>(info.channels);
  std::vector<resampler> resamplers;
  resamplers.reserve(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    auto r = resampler::create(info.sample_rate, output_rate, quality);
    if (!r) return tl::unexpected(r.error());
    resamplers.push_back(std::move(*r));
  }
  audio out;
  out.sample_rate = output_rate;
  out.channels.resize(channels);
  // What the header claims, within the budget: one allocation in the usual case.
  const auto claimed = static_cast<double>(std::min<uint64_t>(info.num_samples, max_input_frames));
  const auto expected = static_cast<std::size_t>(claimed * output_rate / info.sample_rate) + 1;
  for (auto& ch : out.channels) ch.reserve(expected);

  std::vector<std::vector<float>> piece;
  std::size_t frames_in = 0;
  for (;;) {
    auto n = source.read(piece);
    if (!n) return tl::unexpected(n.error());
    if (*n == 0) break;
    frames_in += *n;
    if (frames_in > max_input_frames)
      return fail(errc::limit_exceeded,
                  "audio: the file decodes to more than " + std::to_string(max_input_frames) +
                      " frames at " + std::to_string(info.sample_rate) + " Hz (" +
                      std::to_string(max_input_frames / static_cast<std::size_t>(info.sample_rate)) +
                      " s), more than its headers said or the limit allows");
    for (std::size_t c = 0; c < channels; ++c) {
      auto y = resamplers[c].process(piece[c]);
      if (!y) return tl::unexpected(y.error());
      out.channels[c].insert(out.channels[c].end(), y->begin(), y->end());
    }
  }
  for (std::size_t c = 0; c < channels; ++c) {
    auto tail = resamplers[c].flush();
    if (!tail) return tl::unexpected(tail.error());
    out.channels[c].insert(out.channels[c].end(), tail->begin(), tail->end());
  }
  // soxr's flush may differ by a sample between channels; audio's contract is equal lengths.
  std::size_t shortest = out.num_samples();
  for (const auto& ch : out.channels) shortest = std::min(shortest, ch.size());
  for (auto& ch : out.channels) ch.resize(shortest);
  return out;
}

audio_info raw_info(std::size_t bytes, const raw_format& f) {
  audio_info info;
  info.container = "raw";
  info.codec = to_string(f.encoding);
  info.sample_rate = f.sample_rate;
  info.channels = f.channels;
  info.num_samples = bytes / (bytes_per_sample(f.encoding) * static_cast<std::size_t>(f.channels));
  info.duration_s = static_cast<double>(info.num_samples) / f.sample_rate;
  return info;
}

}  // namespace

result<audio_info> probe_upload(std::span<const uint8_t> bytes, const std::optional<raw_format>& raw) {
  if (!raw) return probe_audio_bytes(bytes);
  // The caller described the stream, so a bad shape is its mistake, not the input's.
  if (auto ok = check_stream_shape("raw", raw->sample_rate, raw->channels); !ok)
    return fail(errc::invalid_argument, ok.error().message);
  const std::size_t frame_bytes = bytes_per_sample(raw->encoding) * static_cast<std::size_t>(raw->channels);
  if (bytes.size() % frame_bytes != 0)
    return fail(errc::truncated, "raw: " + std::to_string(bytes.size()) + " bytes is not a whole number of " +
                                     std::to_string(frame_bytes) + "-byte frames (" +
                                     std::to_string(bytes.size() % frame_bytes) + " bytes left over)");
  return raw_info(bytes.size(), *raw);
}

result<audio> decode_bounded(std::span<const uint8_t> bytes, const std::optional<raw_format>& raw,
                             std::size_t max_input_frames, resample_quality quality, int output_rate) {
  auto info = probe_upload(bytes, raw);
  if (!info) return tl::unexpected(info.error());
  if (raw) {
    pcm_pieces source(bytes, raw->encoding, raw->channels);
    return resample_pieces(source, *info, max_input_frames, quality, output_rate);
  }
  if (info->container == "wav") {
    auto layout = parse_wav(bytes);
    if (!layout) return tl::unexpected(layout.error());
    pcm_pieces source(bytes.subspan(layout->data_offset, layout->data_size), layout->encoding, layout->channels);
    return resample_pieces(source, *info, max_input_frames, quality, output_rate);
  }
  auto reader = ogg_opus_reader::open(bytes);
  if (!reader) return tl::unexpected(reader.error());
  return resample_pieces(*reader, *info, max_input_frames, quality, output_rate);
}

}  // namespace sluice::dsp
