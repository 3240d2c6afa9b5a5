#include "net/rtsp/rtsp_call.hpp"

#include <atomic>
#include <mutex>

namespace sluice::net::rtsp {

namespace {
// Counts the channels' opening answers; calls `ready` once with the outcome.
struct open_tally {
  std::mutex mu;
  int remaining = 0;
  std::string error;
  std::function<void(bool, const std::string&)> ready;
};
}  // namespace

rtsp_call::rtsp_call(actors::engine& engine, std::shared_ptr<calls::call_registry> registry, calls::call_start start,
                     const std::vector<rtsp_media>& media, std::function<void(bool, const std::string&)> ready)
    : registry_(std::move(registry)) {
  const auto id = registry_->begin(start);
  completion_ = std::make_shared<sip::call_completion>(registry_, id, static_cast<int>(media.size()));
  auto tally = std::make_shared<open_tally>();
  tally->remaining = static_cast<int>(media.size());
  tally->ready = std::move(ready);
  for (std::size_t i = 0; i < media.size(); ++i) {
    sip::bridge_args a;
    a.supervisor = engine.supervisor();
    a.request.label = i < start.channel_labels.size() ? start.channel_labels[i] : "stream" + std::to_string(i + 1);
    a.request.sample_rate = media[i].sample_rate;
    a.request.codec = "pcm_s16le";
    a.call = completion_;
    a.channel_index = static_cast<int>(i);
    a.on_open = [tally](bool ok, const std::string& reason) {
      std::function<void(bool, const std::string&)> fire;
      std::string err;
      {
        std::lock_guard lock(tally->mu);
        if (!ok && tally->error.empty()) tally->error = reason.empty() ? "refused" : reason;
        if (--tally->remaining > 0) return;
        fire = std::move(tally->ready);
        err = tally->error;
      }
      if (fire) fire(err.empty(), err);
    };
    bridges_.push_back(sip::spawn_channel_bridge(engine.system(), std::move(a)));
  }
}

rtsp_call::~rtsp_call() { end("closed", nlohmann::json::array()); }

void rtsp_call::audio(std::size_t index, std::vector<uint8_t> pcm) {
  if (ended_ || index >= bridges_.size() || pcm.empty()) return;
  caf::anon_send(bridges_[index], actors::audio_atom::value, std::move(pcm));
}

void rtsp_call::end(const std::string& reason, const nlohmann::json& stats) {
  if (ended_) return;
  ended_ = true;
  if (stats.is_array() && !stats.empty()) registry_->update_metadata(id(), {{"rtp", stats}});
  // Every channel finishes its open utterance (the last words before TEARDOWN keep their
  // final); the call ends in the registry once all have drained.
  for (const auto& b : bridges_) caf::anon_send(b, actors::end_atom::value);
  completion_->call_over(reason);
}

}  // namespace sluice::net::rtsp
