#pragma once
/// G.711 companding (ITU-T G.711): μ-law (PCMU) and A-law (PCMA), one byte per sample.

#include <cstdint>
#include <span>
#include <vector>

namespace sluice::dsp {

/// Expands one μ-law byte to a linear 16-bit sample.
int16_t mulaw_to_linear(uint8_t byte);
/// Expands one A-law byte to a linear 16-bit sample.
int16_t alaw_to_linear(uint8_t byte);
/// Compresses a linear sample to μ-law (used by tests and the training recipe's phone channel).
uint8_t linear_to_mulaw(int16_t sample);
/// Compresses a linear sample to A-law.
uint8_t linear_to_alaw(int16_t sample);

/// Decodes a G.711 byte stream to float samples in [-1, 1]. Every byte is a valid code, so
/// this cannot fail; an interleaved multi-channel stream is split by the caller.
std::vector<float> decode_mulaw(std::span<const uint8_t> bytes);
std::vector<float> decode_alaw(std::span<const uint8_t> bytes);

}  // namespace sluice::dsp
