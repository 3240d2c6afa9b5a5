#include "actors/segment_feeder.hpp"

#include <algorithm>
#include <exception>
#include <memory>
#include <span>

#include <spdlog/spdlog.h>

#include "actors/cpu_affinity.hpp"
#include "actors/messages.hpp"
#include "dsp/audio.hpp"
#include "dsp/slicer.hpp"

namespace sluice::actors {

namespace {

// A second of audio per VAD step: small next to a segment (8-15 s), large next to a frame.
constexpr std::size_t feed_step_samples = dsp::model_sample_rate;

struct feed {
  dsp::segment_stream stream;
  std::vector<float> samples;
  caf::actor channel;
  int nice = 0;
};

void send_segments(caf::event_based_actor* self, const feed& f, const std::vector<dsp::segment>& segs) {
  for (const auto& s : segs)
    self->send(f.channel, segment_atom::value,
               std::vector<float>(f.samples.begin() + s.start_sample, f.samples.begin() + s.end_sample),
               s.start_sample);
}

// Runs to the end in one go: the actor is detached, so this thread is its own.
void run(caf::event_based_actor* self, feed& f) {
  if (f.nice > 0 && !nice_current_thread(f.nice)) spdlog::debug("segment feeder: cannot set nice {}", f.nice);
  name_current_thread("sluice-feeder");
  const std::span<const float> all(f.samples);
  for (std::size_t at = 0; at < all.size(); at += feed_step_samples)
    send_segments(self, f, f.stream.accept(all.subspan(at, std::min(feed_step_samples, all.size() - at))));
  send_segments(self, f, f.stream.finish());
  self->send(f.channel, end_atom::value);
}

}  // namespace

result<caf::actor> feed_segments(caf::actor_system& sys, const caf::actor& channel, std::vector<float> samples16k,
                                 const config::vad_config& vad_cfg, const config::segment_config& segment_cfg,
                                 int nice) {
  auto stream = dsp::segment_stream::create(vad_cfg, segment_cfg);
  if (!stream) return tl::unexpected(stream.error());
  auto f = std::make_shared<feed>(feed{std::move(*stream), std::move(samples16k), channel, nice});
  return sys.spawn<caf::detached>([f](caf::event_based_actor* self) {
    try {
      run(self, *f);
    } catch (const std::exception& e) {
      // Out of memory for a segment's copy: the channel still ends, with what it was sent.
      spdlog::error("segment feeder: {}; the channel ends here", e.what());
      self->send(f->channel, end_atom::value);
    }
    self->quit();
  });
}

}  // namespace sluice::actors
