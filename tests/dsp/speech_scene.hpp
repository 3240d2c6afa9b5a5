#pragma once
/// Test signals for the VAD, endpointer and slicer suites: espeak-ng utterances placed at known
/// offsets in silence, the truth boundaries of each, and noise of several colours mixed in at a
/// chosen SNR (optionally through a telephone channel: 300-3400 Hz, 8 kHz μ-law).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/common/audio_tools.hpp"

namespace sluice::test {

inline constexpr int scene_rate = 16000;
/// A clean sample louder than this (|x|, full scale 1) is speech for the truth boundaries.
inline constexpr float truth_amplitude = 0.01f;
inline constexpr float pcm16_full_scale = 32768.0f;
/// espeak-ng peaks near full scale; calls are quieter, and noise on top must not clip.
inline constexpr float utterance_gain = 0.4f;

inline int64_t seconds(double s) { return static_cast<int64_t>(std::llround(s * scene_rate)); }
inline double to_ms(int64_t samples) { return 1000.0 * static_cast<double>(samples) / scene_rate; }

/// Reads headerless 16-bit little-endian mono PCM as floats.
inline std::vector<float> read_raw16(const std::string& path) {
  const std::vector<uint8_t> bytes = read_bytes(path);
  std::vector<float> out(bytes.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto v = static_cast<int16_t>(static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8)));
    out[i] = static_cast<float>(v) / pcm16_full_scale;
  }
  return out;
}

/// Writes floats (clipped to [-1, 1]) as headerless 16-bit little-endian mono PCM.
inline void write_raw16(const std::string& path, const std::vector<float>& x) {
  std::vector<uint8_t> bytes(x.size() * 2);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float c = std::clamp(x[i], -1.0f, 1.0f - 1.0f / pcm16_full_scale);
    const auto v = static_cast<uint16_t>(static_cast<int16_t>(std::lrint(c * pcm16_full_scale)));
    bytes[2 * i] = static_cast<uint8_t>(v & 0xff);
    bytes[2 * i + 1] = static_cast<uint8_t>(v >> 8);
  }
  write_bytes(path, bytes);
}

/// `text` spoken by espeak-ng `voice`, at 16 kHz; empty on failure.
inline std::vector<float> speak16k(const temp_dir& dir, const std::string& text,
                                   const std::string& voice, int words_per_min = 160) {
  const std::string wav = dir.file("say.wav");
  const std::string raw = dir.file("say.raw");
  if (!espeak(text, wav, voice, words_per_min)) return {};
  if (!sox("'" + wav + "' -r 16000 -c 1 -b 16 -e signed-integer -t raw '" + raw + "'")) return {};
  return read_raw16(raw);
}

/// First and last sample above truth_amplitude, as a half-open range; {0, 0} if none.
struct span_bounds {
  int64_t start = 0;
  int64_t end = 0;
};
inline span_bounds audible_bounds(const std::vector<float>& x) {
  span_bounds b;
  auto loud = [](float s) { return std::abs(s) > truth_amplitude; };
  auto first = std::find_if(x.begin(), x.end(), loud);
  if (first == x.end()) return b;
  auto last = std::find_if(x.rbegin(), x.rend(), loud);
  b.start = first - x.begin();
  b.end = static_cast<int64_t>(x.size()) - (last - x.rbegin());
  return b;
}

/// Clean speech in silence with the truth boundaries of every utterance.
struct scene {
  std::vector<float> clean;
  std::vector<span_bounds> truth;  ///< audible extent of each utterance, in order

  /// Appends `s` seconds of digital silence.
  void pause(double s) { clean.resize(clean.size() + static_cast<std::size_t>(seconds(s)), 0.0f); }

  /// Appends an utterance scaled by `gain`; espeak's own leading/trailing silence is trimmed away
  /// (the truth is measured before scaling, so it does not depend on the gain).
  void say(const std::vector<float>& utterance, float gain = utterance_gain) {
    const span_bounds b = audible_bounds(utterance);
    const auto offset = static_cast<int64_t>(clean.size());
    for (int64_t i = b.start; i < b.end; ++i) clean.push_back(gain * utterance[i]);
    truth.push_back({offset, offset + (b.end - b.start)});
  }

  /// Mean power of the clean signal over the utterances.
  double speech_power() const {
    double sum = 0;
    int64_t n = 0;
    for (const auto& t : truth) {
      for (int64_t i = t.start; i < t.end; ++i) sum += static_cast<double>(clean[i]) * clean[i];
      n += t.end - t.start;
    }
    return n > 0 ? sum / static_cast<double>(n) : 0.0;
  }
};

enum class noise_kind { white, pink, brown };

inline const char* to_string(noise_kind k) {
  switch (k) {
    case noise_kind::white: return "white";
    case noise_kind::pink: return "pink";
    case noise_kind::brown: return "brown";
  }
  return "?";
}

/// `n` samples of stationary noise with unit power (deterministic for a seed).
inline std::vector<float> make_noise(noise_kind kind, std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<double> y(n);
  // Pink: Paul Kellet's economy filter (-3 dB/octave within ~1 dB). Brown: a leaky integrator
  // (-6 dB/octave above a few Hz).
  constexpr double brown_leak = 0.995;
  double b0 = 0, b1 = 0, b2 = 0, acc = 0;
  for (auto& v : y) {
    const double w = gauss(rng);
    switch (kind) {
      case noise_kind::white: v = w; break;
      case noise_kind::pink:
        b0 = 0.99765 * b0 + w * 0.0990460;
        b1 = 0.96300 * b1 + w * 0.2965164;
        b2 = 0.57000 * b2 + w * 1.0526913;
        v = b0 + b1 + b2 + w * 0.1848;
        break;
      case noise_kind::brown:
        acc = brown_leak * acc + w;
        v = acc;
        break;
    }
  }
  double power = 0;
  for (double v : y) power += v * v;
  const double gain = n > 0 && power > 0 ? 1.0 / std::sqrt(power / static_cast<double>(n)) : 0.0;
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(y[i] * gain);
  return out;
}

/// `x` through a telephone channel: band-limited to 300-3400 Hz, 8 kHz μ-law, back to 16 kHz.
inline std::vector<float> telephone(const temp_dir& dir, const std::vector<float>& x) {
  const std::string in = dir.file("phone_in.raw");
  const std::string mid = dir.file("phone.ul");
  const std::string out = dir.file("phone_out.raw");
  write_raw16(in, x);
  const std::string pcm16 = "-t raw -r 16000 -e signed-integer -b 16 -c 1 ";
  if (!sox(pcm16 + "'" + in + "' -t raw -r 8000 -e mu-law -b 8 -c 1 '" + mid + "' sinc 300-3400")) return {};
  if (!sox("-t raw -r 8000 -e mu-law -b 8 -c 1 '" + mid + "' " + pcm16 + "'" + out + "'")) return {};
  std::vector<float> y = read_raw16(out);
  y.resize(x.size(), 0.0f);  // resampling may round the length by a sample
  return y;
}

/// The scene's speech plus noise at `snr_db` (speech power over the utterances / noise power).
inline std::vector<float> noisy(const scene& s, noise_kind kind, double snr_db, uint32_t seed) {
  const std::vector<float> noise = make_noise(kind, s.clean.size(), seed);
  const double gain = std::sqrt(s.speech_power() / std::pow(10.0, snr_db / 10.0));
  std::vector<float> out(s.clean.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = s.clean[i] + static_cast<float>(gain * noise[i]);
  return out;
}

/// `s` through a telephone channel, with truth boundaries re-measured on what the channel passes
/// (a word-final "s" above 3.4 kHz does not reach a phone listener, so it is not speech there).
inline scene through_telephone(const temp_dir& dir, const scene& s) {
  constexpr double search_s = 0.3;
  scene out;
  out.clean = telephone(dir, s.clean);
  const auto n = static_cast<int64_t>(out.clean.size());
  for (const span_bounds& t : s.truth) {
    const int64_t lo = std::max<int64_t>(0, t.start - seconds(search_s));
    const int64_t hi = std::min<int64_t>(n, t.end + seconds(search_s));
    std::vector<float> part(out.clean.begin() + lo, out.clean.begin() + hi);
    for (float& v : part) v /= utterance_gain;  // the truth threshold is on espeak's own scale
    const span_bounds b = audible_bounds(part);
    out.truth.push_back({lo + b.start, lo + b.end});
  }
  return out;
}

/// Sentences a call-center agent or caller might say, none with a comma (espeak pauses there).
inline const std::vector<std::string>& call_sentences() {
  static const std::vector<std::string> sentences = {
      "Thank you for calling customer support.",
      "My account number is four five six seven.",
      "Could you please confirm your date of birth?",
      "I would like to change my billing address.",
      "The payment was declined yesterday.",
      "Let me look into that for you right now.",
      "Your order will arrive on Monday morning.",
      "Can you hear me now?",
      "I have been waiting for over an hour.",
      "Please hold the line while I check.",
      "We can offer you a refund or a replacement.",
      "Is there anything else I can help you with today?",
      "The technician will call you before noon.",
      "I never received the confirmation email.",
      "Your reference number is nine one two.",
      "Thank you for your patience and have a good day.",
  };
  return sentences;
}

inline const std::vector<std::string>& test_voices() {
  static const std::vector<std::string> voices = {"en-us", "en", "en+f3", "en-us+m3", "en+f2"};
  return voices;
}

/// Sentences from call_sentences() in turn (voices in turn) with pauses of pause_min_s ..
/// pause_max_s between them, until the scene is at least `total_s` long; 0.5 s silence at both ends.
inline scene many_sentences(const temp_dir& dir, double total_s, double pause_min_s, double pause_max_s,
                            uint32_t seed) {
  constexpr double margin_s = 0.5;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> pause(pause_min_s, pause_max_s);
  scene s;
  s.pause(margin_s);
  for (std::size_t i = 0; static_cast<double>(s.clean.size()) < (total_s - margin_s) * scene_rate; ++i) {
    if (i > 0) s.pause(pause(rng));
    const auto& sentences = call_sentences();
    const auto& voices = test_voices();
    const std::vector<float> utterance = speak16k(dir, sentences[i % sentences.size()], voices[i % voices.size()]);
    if (utterance.empty()) break;  // no espeak-ng: the caller sees a short scene
    s.say(utterance);
  }
  s.pause(margin_s);
  return s;
}

}  // namespace sluice::test
