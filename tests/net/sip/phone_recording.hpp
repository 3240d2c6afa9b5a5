#pragma once
/// The committed phone recording the real-peer SIP tests play (baresip, ffmpeg's RTP), its true
/// transcript (written by a person) and the phone-speech WER bound for lossy codecs.
#include <string>

#include "tests/common/audio_tools.hpp"

namespace sluice::test {

inline const std::string phone_recording = SLUICE_TEST_DATA_DIR "/e2e/cancelled_march_8k_mulaw.wav";
inline constexpr double phone_wer_target = 0.25;

/// The recording's true transcript, without its trailing line break.
inline std::string phone_recording_text() {
  auto b = read_bytes(SLUICE_TEST_DATA_DIR "/e2e/cancelled_march_8k_mulaw.txt");
  std::string t(b.begin(), b.end());
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

}  // namespace sluice::test
