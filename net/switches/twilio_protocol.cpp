#include "net/switches/twilio_protocol.hpp"

#include <algorithm>

#include "net/switches/switch_json.hpp"

namespace sluice::net::switches {

namespace {

constexpr int twilio_rate = 8000;

std::string label_of(const std::string& track) { return track == "inbound" ? "caller" : "callee"; }

}  // namespace

switch_step twilio_protocol::on_binary(std::span<const uint8_t>) {
  return refuse(close_code::unsupported, "Twilio Media Streams sends JSON text frames only, not binary");
}

switch_step twilio_protocol::on_text(std::string_view text) {
  auto j = parse_object(text);
  if (!j) return refuse(close_code::policy, j.error());
  const auto event = string_field(*j, "event");
  if (!event) return refuse(close_code::policy, "a message without a string \"event\"");
  if (started_ && j->contains("streamSid") && string_field(*j, "streamSid") != stream_sid_)
    return refuse(close_code::policy, "streamSid differs from the start message's");
  switch_step step;
  if (*event == "connected") {
    if (started_) return refuse(close_code::policy, "connected after start");
    return step;
  }
  if (*event == "start") return start(*j);
  if (!started_) return refuse(close_code::policy, "\"" + *event + "\" before start");
  if (*event == "media") return media(*j);
  if (*event == "stop") {
    if (!stopped_) step.end = "stop";
    stopped_ = true;
    return step;
  }
  if (*event == "dtmf" || *event == "mark") {
    const auto it = j->find(*event);
    if (it == j->end() || !it->is_object()) return refuse(close_code::policy, "\"" + *event + "\" without its object");
    calls::call_event ev;
    ev.type = *event;
    if (*event == "dtmf") {
      const auto digit = string_field(*it, "digit");
      if (!digit) return refuse(close_code::policy, "dtmf without a string digit");
      ev.data = {{"digit", *digit}};
      if (auto track = string_field(*it, "track")) ev.data["track"] = *track;
    } else {
      ev.data = *it;
    }
    step.events.push_back(std::move(ev));
    return step;
  }
  return refuse(close_code::policy, "unknown event \"" + *event + "\"");
}

switch_step twilio_protocol::start(const nlohmann::json& j) {
  if (started_) return refuse(close_code::policy, "a second start");
  const auto it = j.find("start");
  if (it == j.end() || !it->is_object()) return refuse(close_code::policy, "start without its \"start\" object");
  const auto& s = *it;
  auto sid = string_field(j, "streamSid");
  if (!sid) sid = string_field(s, "streamSid");
  if (!sid) return refuse(close_code::policy, "start without a streamSid");
  const auto fmt = s.find("mediaFormat");
  if (fmt != s.end()) {
    if (!fmt->is_object() || string_field(*fmt, "encoding") != "audio/x-mulaw" ||
        integer_field(*fmt, "sampleRate") != twilio_rate || integer_field(*fmt, "channels").value_or(1) != 1)
      return refuse(close_code::unsupported, "mediaFormat must be audio/x-mulaw, 8000 Hz, 1 channel: " + fmt->dump());
  }
  std::vector<std::string> tracks{"inbound"};
  if (const auto t = s.find("tracks"); t != s.end()) {
    if (!t->is_array() || t->empty()) return refuse(close_code::policy, "tracks must be a non-empty array");
    tracks.clear();
    for (const auto& x : *t) {
      if (!x.is_string() || (x != "inbound" && x != "outbound"))
        return refuse(close_code::policy, "unknown track " + x.dump() + " (inbound, outbound)");
      if (std::find(tracks.begin(), tracks.end(), x.get<std::string>()) != tracks.end())
        return refuse(close_code::policy, "track " + x.dump() + " twice");
      tracks.push_back(x.get<std::string>());
    }
  }
  started_ = true;
  stream_sid_ = *sid;
  tracks_ = tracks;
  call_plan plan;
  plan.start.source = "twilio";
  plan.start.external_id = string_field(s, "callSid").value_or("");
  for (const auto& t : tracks) plan.start.channel_labels.push_back(label_of(t));
  plan.start.metadata = {{"streamSid", stream_sid_}, {"tracks", tracks}};
  if (auto a = string_field(s, "accountSid")) plan.start.metadata["accountSid"] = *a;
  if (const auto c = s.find("customParameters"); c != s.end() && c->is_object())
    plan.start.metadata["customParameters"] = *c;
  plan.codec = "mulaw";
  plan.sample_rate = twilio_rate;
  switch_step step;
  step.open = std::move(plan);
  return step;
}

int twilio_protocol::track_index(const std::string& track) const {
  const auto it = std::find(tracks_.begin(), tracks_.end(), track);
  return it == tracks_.end() ? -1 : static_cast<int>(it - tracks_.begin());
}

switch_step twilio_protocol::media(const nlohmann::json& j) {
  const auto it = j.find("media");
  if (it == j.end() || !it->is_object()) return refuse(close_code::policy, "media without its \"media\" object");
  const auto payload = string_field(*it, "payload");
  if (!payload) return refuse(close_code::policy, "media without a string payload");
  // Twilio omits the track on single-track streams: it is the first one.
  const auto track = string_field(*it, "track").value_or(tracks_.front());
  const int index = track_index(track);
  if (index < 0) return refuse(close_code::policy, "media of track \"" + track + "\", not announced in start");
  auto bytes = decode_base64(*payload);
  if (!bytes) return refuse(close_code::policy, "the media payload is not base64");
  switch_step step;
  if (!stopped_ && !bytes->empty()) step.audio.push_back({index, std::move(*bytes)});
  return step;
}

}  // namespace sluice::net::switches
