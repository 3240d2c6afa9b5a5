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
  std::vector<speech_region> regions;   ///< VAD speech regions (empty when not sliced)
  std::vector<segment> segments;        ///< 8-15 s model segments (config [segment]; empty when not sliced)
};

/// How far the front end goes: `sliced` runs the VAD and slicing of every channel; `samples`
/// stops at the 16 kHz (denoised) samples, for a caller that slices while it recognises
/// (dsp::segment_stream, actors::feed_segments).
enum class front_end { sliced, samples };

struct file_speech {
  int input_sample_rate = 0;  ///< Hz, before resampling
  double duration_s = 0;
  std::vector<channel_speech> channels;
};

/// Runs the front end on decoded audio (an upload, a buffer).
result<file_speech> prepare_audio(const audio& decoded, const config::sluice_config& cfg,
                                  front_end upto = front_end::sliced);

/// The same, taking the samples over: audio already at 16 kHz is used in place, not copied.
result<file_speech> prepare_audio(audio&& decoded, const config::sluice_config& cfg,
                                  front_end upto = front_end::sliced);

/// Runs the front end on one file. Errors name the stage's problem (decoder, resampler, ...).
result<file_speech> prepare_file(const std::string& path, const config::sluice_config& cfg,
                                 front_end upto = front_end::sliced);

}  // namespace sluice::dsp
