#pragma once
/// The committed phone recording the real-peer SIP and RTSP tests play (baresip, ffmpeg's RTP,
/// RTSP pushes and pulls), its true
/// transcript (written by a person), what the engine makes of the file read directly (what a
/// lossless G.711 call must give word for word) and the phone-speech WER bound.
#include <string>

#include "tests/common/audio_tools.hpp"
#include "tests/common/file_transcript.hpp"
#include "tests/common/word_errors.hpp"

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

/// The engine's text of the recording read directly (tests/common/file_transcript.hpp).
inline const std::string& phone_recording_engine_text() {
  static const std::string t = file_transcript(phone_recording);
  return t;
}

/// A call's text over a lossless path (G.711 carries the file's very samples): word for word the
/// engine's text of the file read directly (any difference is the transport's), and within the
/// phone WER target of the true transcript (the model's own errors).
inline void check_lossless_call_text(const std::string& text) {
  CHECK(text == phone_recording_engine_text());
  INFO("true transcript: \"" << phone_recording_text() << "\"");
  CHECK(word_error_rate(phone_recording_text(), text) <= phone_wer_target);
}

}  // namespace sluice::test
