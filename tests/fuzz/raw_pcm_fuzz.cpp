// libFuzzer target: raw streams the caller describes (dsp/pcm.hpp decode_raw, every encoding,
// G.711 μ-law and A-law through dsp/g711.hpp). The first bytes of the input are the description:
//   byte 0      sample encoding (mod the number of encodings)
//   byte 1      channels (0 is allowed through, to test the refusal)
//   bytes 2..4  sample rate in Hz, little-endian (up to 16 MHz, to test the range check)
//   the rest    the interleaved sample bytes
// Beyond "no crash": decode_raw keeps the described shape exactly or refuses with a message,
// refuses a partial final frame, and every G.711 code is a fixed point of expand(compress(x)).

#include <cstddef>
#include <cstdint>
#include <span>

#include "dsp/g711.hpp"
#include "dsp/pcm.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

using namespace sluice;

namespace {

constexpr std::size_t header_bytes = 5;
constexpr int encoding_count = static_cast<int>(dsp::sample_encoding::alaw) + 1;

// G.711 codes decode to values the encoder reproduces exactly (the companding grid), so
// expanding, compressing and expanding again must give the same sample.
void check_g711(std::span<const uint8_t> codes) {
  const auto mu = dsp::decode_mulaw(codes);
  const auto a = dsp::decode_alaw(codes);
  fuzz::require(mu.size() == codes.size() && a.size() == codes.size(), "g711 length changed");
  for (std::size_t i = 0; i < codes.size(); ++i) {
    const int16_t m = dsp::mulaw_to_linear(codes[i]);
    fuzz::require(dsp::mulaw_to_linear(dsp::linear_to_mulaw(m)) == m, "mu-law not a fixed point");
    const int16_t l = dsp::alaw_to_linear(codes[i]);
    fuzz::require(dsp::alaw_to_linear(dsp::linear_to_alaw(l)) == l, "a-law not a fixed point");
    fuzz::require(mu[i] >= -1.0f && mu[i] <= 1.0f && a[i] >= -1.0f && a[i] <= 1.0f,
                  "g711 sample outside [-1, 1]");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < header_bytes) return 0;
  dsp::raw_format format;
  format.encoding = static_cast<dsp::sample_encoding>(data[0] % encoding_count);
  format.channels = data[1];
  format.sample_rate = data[2] | (data[3] << 8) | (data[4] << 16);
  const std::span<const uint8_t> bytes(data + header_bytes, size - header_bytes);

  check_g711(bytes);
  const auto decoded = dsp::decode_raw(bytes, format);
  const bool shape_ok = dsp::check_stream_shape("raw", format.sample_rate, format.channels).has_value();
  const std::size_t frame =
      static_cast<std::size_t>(format.channels) * dsp::bytes_per_sample(format.encoding);
  if (!decoded) {
    fuzz::require_message(decoded.error());
    fuzz::require(!shape_ok || bytes.size() % frame != 0, "decode_raw refused a valid stream");
    return 0;
  }
  fuzz::require(shape_ok && bytes.size() % frame == 0, "decode_raw accepted a bad stream");
  fuzz::require_valid_audio(*decoded);
  fuzz::require(decoded->sample_rate == format.sample_rate &&
                    static_cast<int>(decoded->num_channels()) == format.channels &&
                    decoded->num_samples() == bytes.size() / frame,
                "decode_raw changed the described shape");
  return 0;
}
