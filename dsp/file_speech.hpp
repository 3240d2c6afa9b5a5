#pragma once
/// The front end every file-based command shares: decode -> resample to 16 kHz -> optional
/// denoise -> VAD -> slicing into model-sized segments, for each channel on its own.

#include <string>
#include <vector>

#include "config/sluice_config.hpp"
#include "dsp/audio.hpp"
#include "dsp/slicer.hpp"
#include "dsp/vad.hpp"

namespace sluice::dsp {

struct channel_speech {
  std::vector<float> samples;                ///< f32 [n] at 16 kHz (denoised when configured)
  std::vector<speech_region> regions;   ///< VAD speech regions
  std::vector<segment> segments;        ///< 8-15 s model segments (config [segment])
};

struct file_speech {
  int input_sample_rate = 0;  ///< Hz, before resampling
  double duration_s = 0;
  std::vector<channel_speech> channels;
};

/// Runs the front end on decoded audio (an upload, a buffer).
result<file_speech> prepare_audio(const audio& decoded, const config::sluice_config& cfg);

/// The same, taking the samples over: audio already at 16 kHz is used in place, not copied.
result<file_speech> prepare_audio(audio&& decoded, const config::sluice_config& cfg);

/// Runs the front end on one file. Errors name the stage's problem (decoder, resampler, ...).
result<file_speech> prepare_file(const std::string& path, const config::sluice_config& cfg);

}  // namespace sluice::dsp
