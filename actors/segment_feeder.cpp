#include "actors/segment_feeder.hpp"

#include <algorithm>
#include <atomic>
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
  channel_actor_type channel;
  int nice = 0;
  // Set (from the channel's thread) when the channel terminates: nothing is left to feed.
  std::shared_ptr<std::atomic<bool>> channel_gone = std::make_shared<std::atomic<bool>>(false);
};

void send_segments(caf::event_based_actor* self, const feed& f, const std::vector<dsp::segment>& segs) {
  for (const auto& s : segs)
    self->send(f.channel, segment_atom::value,
               std::vector<float>(f.samples.begin() + s.start_sample, f.samples.begin() + s.end_sample),
               s.start_sample);
}

// Runs to the end in one go (the actor is detached, so this thread is its own), or until the
// channel is gone: false then.
bool run(caf::event_based_actor* self, feed& f) {
  if (f.nice > 0 && !nice_current_thread(f.nice)) spdlog::debug("segment feeder: cannot set nice {}", f.nice);
  name_current_thread("sluice-feeder");
  const std::span<const float> all(f.samples);
  for (std::size_t at = 0; at < all.size(); at += feed_step_samples) {
    if (f.channel_gone->load(std::memory_order_relaxed)) return false;
    send_segments(self, f, f.stream.accept(all.subspan(at, std::min(feed_step_samples, all.size() - at))));
  }
  send_segments(self, f, f.stream.finish());
  self->send(f.channel, end_atom::value);
  return true;
}

}  // namespace

result<caf::actor> feed_segments(caf::actor_system& sys, const channel_actor_type& channel, std::vector<float> samples16k,
                                 const config::vad_config& vad_cfg, const config::segment_config& segment_cfg,
                                 int nice) {
  auto stream = dsp::segment_stream::create(vad_cfg, segment_cfg);
  if (!stream) return tl::unexpected(stream.error());
  auto f = std::make_shared<feed>(feed{std::move(*stream), std::move(samples16k), channel, nice});
  // A channel aborted (its client gone) or killed stops its feeder at the next second of audio,
  // rather than the feeder analysing the rest of the file for nobody. Attached to an actor that
  // has already terminated, the functor runs at once.
  if (auto* ch = caf::actor_cast<caf::abstract_actor*>(channel))
    ch->attach_functor([gone = f->channel_gone] { gone->store(true, std::memory_order_relaxed); });
  return sys.spawn<caf::detached>([f](caf::event_based_actor* self) {
    bool done = false;
    try {
      done = run(self, *f);
    } catch (const std::exception& e) {
      // Out of memory for a segment's copy: the channel still ends, with what it was sent.
      spdlog::error("segment feeder: {}; the channel ends here", e.what());
      self->send(f->channel, end_atom::value);
      done = true;
    }
    // user_shutdown: stopped early because the channel was gone.
    self->quit(done ? caf::exit_reason::normal : caf::exit_reason::user_shutdown);
  });
}

}  // namespace sluice::actors
