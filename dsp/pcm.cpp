#include "dsp/pcm.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "dsp/g711.hpp"

namespace sluice::dsp {
namespace {

constexpr int u8_midpoint = 128;
constexpr float s8_scale = 1.0f / 128.0f;
constexpr float s16_scale = 1.0f / 32768.0f;
constexpr float s24_scale = 1.0f / 8388608.0f;
constexpr double s32_scale = 1.0 / 2147483648.0;
constexpr int bits_per_byte = 8;

// Assembles an unsigned little-endian integer from `n` bytes; the caller has checked bounds.
inline uint64_t load_le(const uint8_t* p, std::size_t n) {
  uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (bits_per_byte * i);
  return v;
}

// Float files may exceed full scale (or carry NaN after a bad mix); the contract is [-1, 1].
inline float clamp_unit(double v) {
  if (std::isnan(v)) return 0.0f;
  return static_cast<float>(std::clamp(v, -1.0, 1.0));
}

float sample_u8(const uint8_t* p) { return (static_cast<int>(p[0]) - u8_midpoint) * s8_scale; }
float sample_s16(const uint8_t* p) {
  return static_cast<int16_t>(static_cast<uint16_t>(load_le(p, 2))) * s16_scale;
}
float sample_s24(const uint8_t* p) {
  // Place the 24 bits at the top of an int32 so the arithmetic shift sign-extends them.
  auto top = static_cast<int32_t>(static_cast<uint32_t>(load_le(p, 3)) << bits_per_byte);
  return static_cast<float>(top >> bits_per_byte) * s24_scale;
}
float sample_s32(const uint8_t* p) {
  return static_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(load_le(p, 4))) * s32_scale);
}
float sample_f32(const uint8_t* p) {
  return clamp_unit(std::bit_cast<float>(static_cast<uint32_t>(load_le(p, 4))));
}
float sample_f64(const uint8_t* p) { return clamp_unit(std::bit_cast<double>(load_le(p, 8))); }
float sample_mulaw(const uint8_t* p) { return mulaw_to_linear(p[0]) * s16_scale; }
float sample_alaw(const uint8_t* p) { return alaw_to_linear(p[0]) * s16_scale; }

// The loop is instantiated per reader so the per-sample call inlines.
template <float (*read)(const uint8_t*)>
void split(std::span<const uint8_t> bytes, std::size_t sample_bytes,
           std::vector<std::vector<float>>& out) {
  const std::size_t channels = out.size();
  const std::size_t frames = out.empty() ? 0 : out[0].size();
  const uint8_t* p = bytes.data();
  for (std::size_t f = 0; f < frames; ++f)
    for (std::size_t c = 0; c < channels; ++c, p += sample_bytes) out[c][f] = read(p);
}

}  // namespace

const char* to_string(sample_encoding e) {
  switch (e) {
    case sample_encoding::pcm_u8:
      return "pcm_u8";
    case sample_encoding::pcm_s16le:
      return "pcm_s16le";
    case sample_encoding::pcm_s24le:
      return "pcm_s24le";
    case sample_encoding::pcm_s32le:
      return "pcm_s32le";
    case sample_encoding::pcm_f32le:
      return "pcm_f32le";
    case sample_encoding::pcm_f64le:
      return "pcm_f64le";
    case sample_encoding::mulaw:
      return "mulaw";
    case sample_encoding::alaw:
      return "alaw";
  }
  return "unknown";
}

std::size_t bytes_per_sample(sample_encoding e) {
  switch (e) {
    case sample_encoding::pcm_u8:
    case sample_encoding::mulaw:
    case sample_encoding::alaw:
      return 1;
    case sample_encoding::pcm_s16le:
      return 2;
    case sample_encoding::pcm_s24le:
      return 3;
    case sample_encoding::pcm_s32le:
    case sample_encoding::pcm_f32le:
      return 4;
    case sample_encoding::pcm_f64le:
      return 8;
  }
  return 1;
}

result<void> check_stream_shape(const char* what, long long sample_rate, long long channels) {
  const std::string w = what;
  if (channels <= 0)
    return fail(errc::corrupt,
                w + ": zero channels (header says " + std::to_string(channels) + ")");
  if (channels > max_channels)
    return fail(errc::unsupported, w + ": " + std::to_string(channels) +
                                       " channels, more than the supported " +
                                       std::to_string(max_channels));
  if (sample_rate <= 0)
    return fail(errc::corrupt, w + ": sample rate " + std::to_string(sample_rate) + " Hz");
  if (sample_rate < min_sample_rate || sample_rate > max_sample_rate)
    return fail(errc::unsupported, w + ": sample rate " + std::to_string(sample_rate) +
                                       " Hz is outside [" + std::to_string(min_sample_rate) + ", " +
                                       std::to_string(max_sample_rate) + "]");
  return {};
}

result<std::vector<std::vector<float>>> deinterleave(std::span<const uint8_t> bytes,
                                                     sample_encoding encoding, int channels) {
  if (channels <= 0 || channels > max_channels)
    return fail(errc::invalid_argument,
                "deinterleave: channel count " + std::to_string(channels) + " out of range");
  const std::size_t sample_bytes = bytes_per_sample(encoding);
  const std::size_t frame_bytes = sample_bytes * static_cast<std::size_t>(channels);
  if (bytes.size() % frame_bytes != 0)
    return fail(errc::truncated,
                std::string(to_string(encoding)) + ": " + std::to_string(bytes.size()) +
                    " bytes is not a whole number of " + std::to_string(frame_bytes) +
                    "-byte frames (" + std::to_string(channels) + " channels x " +
                    std::to_string(sample_bytes) + " bytes); " +
                    std::to_string(bytes.size() % frame_bytes) + " bytes left over");
  const std::size_t frames = bytes.size() / frame_bytes;
  // Each channel sized on its own (not copies of one zeroed prototype: that copied megabytes
  // of zeros per file).
  std::vector<std::vector<float>> out(static_cast<std::size_t>(channels));
  for (auto& ch : out) ch.resize(frames);
  switch (encoding) {
    case sample_encoding::pcm_u8:
      split<sample_u8>(bytes, sample_bytes, out);
      break;
    case sample_encoding::pcm_s16le:
      split<sample_s16>(bytes, sample_bytes, out);
      break;
    case sample_encoding::pcm_s24le:
      split<sample_s24>(bytes, sample_bytes, out);
      break;
    case sample_encoding::pcm_s32le:
      split<sample_s32>(bytes, sample_bytes, out);
      break;
    case sample_encoding::pcm_f32le:
      split<sample_f32>(bytes, sample_bytes, out);
      break;
    case sample_encoding::pcm_f64le:
      split<sample_f64>(bytes, sample_bytes, out);
      break;
    case sample_encoding::mulaw:
      split<sample_mulaw>(bytes, sample_bytes, out);
      break;
    case sample_encoding::alaw:
      split<sample_alaw>(bytes, sample_bytes, out);
      break;
  }
  return out;
}

result<audio> decode_raw(std::span<const uint8_t> bytes, const raw_format& format) {
  // The caller described the stream, so a bad shape is its mistake, not the input's.
  if (auto ok = check_stream_shape("raw", format.sample_rate, format.channels); !ok)
    return fail(errc::invalid_argument, ok.error().message);
  auto planar = deinterleave(bytes, format.encoding, format.channels);
  if (!planar) return tl::unexpected(planar.error());
  return audio{format.sample_rate, std::move(*planar)};
}

}  // namespace sluice::dsp
