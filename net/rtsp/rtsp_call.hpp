#pragma once
/// One RTSP stream set (a push session or a pull) as a call: registered in the call registry
/// (source "rtsp", external id the URL path, one channel per audio stream), one engine channel
/// per stream through the SIP side's channel bridge, and a clean end: the streams' held audio is
/// released, then every channel gets its end, and the call ends once their last finals are in.
///
/// Threading: created and fed from one strand (the owner's); `ready` is called once from an
/// actor's thread, so the owner posts it back to its strand.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/engine.hpp"
#include "net/calls/call_registry.hpp"
#include "net/rtsp/rtsp_sdp.hpp"
#include "net/sip/channel_bridge.hpp"

namespace sluice::net::rtsp {

class rtsp_call {
 public:
  /// Registers the call and asks the engine for one channel per entry of `media` (each taken).
  /// `ready(ok, reason)` runs once every channel has opened (ok) or one was refused.
  rtsp_call(actors::engine& engine, std::shared_ptr<calls::call_registry> registry, calls::call_start start,
            const std::vector<rtsp_media>& media, std::function<void(bool ok, const std::string& reason)> ready);
  ~rtsp_call();
  rtsp_call(const rtsp_call&) = delete;
  rtsp_call& operator=(const rtsp_call&) = delete;

  /// Audio (16-bit little-endian PCM at the stream's rate) of stream `index`.
  void audio(std::size_t index, std::vector<uint8_t> pcm_s16le);
  /// The call is over for `reason`: `stats` (one object per stream) go into its metadata as
  /// "rtp", every channel gets its end. Idempotent (the first reason is kept).
  void end(const std::string& reason, const nlohmann::json& stats);
  const calls::call_id& id() const { return completion_->id(); }

 private:
  std::shared_ptr<calls::call_registry> registry_;
  std::shared_ptr<sip::call_completion> completion_;
  std::vector<caf::actor> bridges_;
  bool ended_ = false;
};

}  // namespace sluice::net::rtsp
