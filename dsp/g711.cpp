#include "dsp/g711.hpp"

namespace sluice::dsp {
namespace {

constexpr int mulaw_bias = 0x84;
constexpr int mulaw_clip = 32635;
constexpr float pcm16_scale = 1.0f / 32768.0f;

}  // namespace

int16_t mulaw_to_linear(uint8_t byte) {
  // Bytes are stored inverted; sign in bit 7, 3-bit exponent, 4-bit mantissa.
  int u = ~byte & 0xff;
  int t = ((u & 0x0f) << 3) + mulaw_bias;
  t <<= (u & 0x70) >> 4;
  return static_cast<int16_t>((u & 0x80) ? (mulaw_bias - t) : (t - mulaw_bias));
}

int16_t alaw_to_linear(uint8_t byte) {
  // Even bits are inverted on the wire (XOR 0x55).
  int a = byte ^ 0x55;
  int t = (a & 0x0f) << 4;
  int seg = (a & 0x70) >> 4;
  switch (seg) {
    case 0: t += 8; break;
    case 1: t += 0x108; break;
    default: t += 0x108; t <<= seg - 1; break;
  }
  return static_cast<int16_t>((a & 0x80) ? t : -t);
}

uint8_t linear_to_mulaw(int16_t sample) {
  int s = sample;
  int sign = (s < 0) ? 0x80 : 0;
  if (s < 0) s = -s;
  if (s > mulaw_clip) s = mulaw_clip;
  s += mulaw_bias;
  int exponent = 7;
  for (int mask = 0x4000; (s & mask) == 0 && exponent > 0; mask >>= 1) --exponent;
  int mantissa = (s >> (exponent + 3)) & 0x0f;
  return static_cast<uint8_t>(~(sign | (exponent << 4) | mantissa) & 0xff);
}

uint8_t linear_to_alaw(int16_t sample) {
  int s = sample;
  int sign = (s >= 0) ? 0x80 : 0;
  if (s < 0) s = -s - 1;
  if (s > 32767) s = 32767;
  int exponent = 7;
  for (int mask = 0x4000; (s & mask) == 0 && exponent > 0; mask >>= 1) --exponent;
  int mantissa = (exponent == 0) ? (s >> 4) & 0x0f : (s >> (exponent + 3)) & 0x0f;
  return static_cast<uint8_t>((sign | (exponent << 4) | mantissa) ^ 0x55);
}

std::vector<float> decode_mulaw(std::span<const uint8_t> bytes) {
  std::vector<float> out(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) out[i] = mulaw_to_linear(bytes[i]) * pcm16_scale;
  return out;
}

std::vector<float> decode_alaw(std::span<const uint8_t> bytes) {
  std::vector<float> out(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) out[i] = alaw_to_linear(bytes[i]) * pcm16_scale;
  return out;
}

}  // namespace sluice::dsp
