#include "net/switches/fork_protocol.hpp"

#include <algorithm>

#include "net/switches/switch_json.hpp"

namespace sluice::net::switches {

namespace {

constexpr int supported_rates[] = {8000, 16000, 24000, 32000, 48000, 64000};

bool supported_rate(long long hz) {
  return std::find(std::begin(supported_rates), std::end(supported_rates), hz) != std::end(supported_rates);
}

// The switch's id of the call, under the names jambonz and drachtio applications use.
std::string external_id(const nlohmann::json& meta) {
  for (const char* key : {"callSid", "call_sid", "callId", "callid", "uuid"})
    if (auto v = string_field(meta, key)) return *v;
  return {};
}

}  // namespace

fork_protocol::fork_protocol(fork_flavour flavour, fork_defaults defaults)
    : flavour_(flavour), defaults_(std::move(defaults)) {}

std::string_view fork_protocol::source() const { return flavour_ == fork_flavour::jambonz ? "jambonz" : "audio_fork"; }

switch_step fork_protocol::error(close_code code, const std::string& reason) const {
  return refuse(code, reason, nlohmann::json{{"type", "error"}, {"data", {{"reason", reason}}}}.dump());
}

switch_step fork_protocol::on_text(std::string_view text) {
  if (!started_) return start(text);
  switch_step step;
  calls::call_event ev;
  auto j = parse_object(text);
  if (!j) {
    ev.type = "text";
    ev.data = {{"text", std::string(text)}};
  } else if (string_field(*j, "event") == "dtmf" && string_field(*j, "dtmf")) {
    ev.type = "dtmf";
    ev.data = {{"digit", *string_field(*j, "dtmf")}};
    if (j->contains("duration")) ev.data["duration"] = (*j)["duration"];
  } else {
    ev.type = "text";
    ev.data = std::move(*j);
  }
  step.events.push_back(std::move(ev));
  return step;
}

switch_step fork_protocol::start(std::string_view text) {
  auto j = parse_object(text);
  nlohmann::json meta;
  if (j) {
    meta = std::move(*j);
  } else if (flavour_ == fork_flavour::audio_fork) {
    // mod_audio_fork's metadata is whatever text the application chose.
    meta = {{"text", std::string(text)}};
  } else {
    return error(close_code::unsupported, "the metadata frame: " + j.error());
  }
  long long rate = defaults_.sample_rate;
  if (meta.contains("sampleRate")) {
    const auto r = integer_field(meta, "sampleRate");
    if (!r) return error(close_code::unsupported, "sampleRate must be a whole number of Hz");
    rate = *r;
  }
  if (!supported_rate(rate))
    return error(close_code::unsupported,
                 "sampleRate " + std::to_string(rate) + " is not supported (8000, 16000, 24000, 32000, 48000, 64000)");
  std::string mix = defaults_.mix_type;
  if (meta.contains("mixType")) {
    const auto m = string_field(meta, "mixType");
    if (!m) return error(close_code::unsupported, "mixType must be a string");
    mix = *m;
  }
  if (mix == "mono") labels_ = {"caller"};
  else if (mix == "mixed") labels_ = {"mixed"};
  else if (mix == "stereo") labels_ = {"caller", "callee"};
  else return error(close_code::unsupported, "mixType \"" + mix + "\" is not mono, mixed or stereo");
  stereo_ = mix == "stereo";
  started_ = true;
  call_plan plan;
  plan.start.source = std::string(source());
  plan.start.external_id = external_id(meta);
  plan.start.channel_labels = labels_;
  plan.start.metadata = std::move(meta);
  plan.start.metadata["sampleRate"] = rate;
  plan.start.metadata["mixType"] = mix;
  plan.codec = "pcm_s16le";
  plan.sample_rate = static_cast<int>(rate);
  switch_step step;
  step.open = std::move(plan);
  return step;
}

switch_step fork_protocol::on_binary(std::span<const uint8_t> bytes) {
  if (!started_) return error(close_code::policy, "binary audio before the metadata text frame");
  switch_step step;
  if (ended_) return step;  // audio after the end: ignored
  if (bytes.empty()) {
    ended_ = true;
    step.end = "end of stream";
    return step;
  }
  if (!stereo_) {
    step.audio.push_back({0, std::vector<uint8_t>(bytes.begin(), bytes.end())});
    return step;
  }
  auto [caller, callee] = split_.split(bytes);
  if (!caller.empty()) step.audio.push_back({0, std::move(caller)});
  if (!callee.empty()) step.audio.push_back({1, std::move(callee)});
  return step;
}

std::vector<std::string> fork_protocol::on_result(int index, const actors::transcript_event& ev) {
  const auto label = index >= 0 && index < static_cast<int>(labels_.size()) ? labels_[static_cast<std::size_t>(index)] : "";
  nlohmann::json data{{"channel", index},         {"label", label},         {"is_final", ev.is_final},
                      {"utterance", ev.utterance}, {"text", ev.text},         {"start_ms", ev.start_ms},
                      {"end_ms", ev.end_ms},       {"words", words_json(ev)}};
  return {nlohmann::json{{"type", "transcription"}, {"data", std::move(data)}}.dump()};
}

}  // namespace sluice::net::switches
