#include "net/switches/jambonz_stt_protocol.hpp"

#include "net/switches/switch_json.hpp"

namespace sluice::net::switches {

namespace {

constexpr int default_rate = 8000;  // "audio ... at 8khz sampling" when sampleRateHz is absent
constexpr int min_rate = 8000, max_rate = 48000;
// jambonz numbers the channel of a result from 1 (one audio stream per connection).
constexpr int result_channel = 1;

switch_step stt_error(close_code code, const std::string& reason) {
  return refuse(code, reason, nlohmann::json{{"type", "error"}, {"error", reason}}.dump());
}

}  // namespace

switch_step jambonz_stt_protocol::on_text(std::string_view text) {
  auto j = parse_object(text);
  if (!j) return stt_error(close_code::policy, j.error());
  const auto type = string_field(*j, "type");
  if (!type) return stt_error(close_code::policy, "a message without a string \"type\"");
  if (*type == "start") return start(*j);
  if (!started_) return stt_error(close_code::policy, "\"" + *type + "\" before start");
  switch_step step;
  if (*type == "stop") {
    if (!stopped_) step.end = "stop";
    stopped_ = true;
    return step;
  }
  return stt_error(close_code::policy, "unknown message type \"" + *type + "\"");
}

switch_step jambonz_stt_protocol::start(const nlohmann::json& j) {
  if (started_) return stt_error(close_code::policy, "a second start");
  const auto format = string_field(j, "format").value_or("raw");
  if (format != "raw") return stt_error(close_code::unsupported, "format \"" + format + "\" is not raw");
  const auto encoding = string_field(j, "encoding").value_or("LINEAR16");
  if (encoding != "LINEAR16") return stt_error(close_code::unsupported, "encoding \"" + encoding + "\" is not LINEAR16");
  long long rate = default_rate;
  if (j.contains("sampleRateHz")) {
    const auto r = integer_field(j, "sampleRateHz");
    if (!r || *r < min_rate || *r > max_rate)
      return stt_error(close_code::unsupported, "sampleRateHz must be a whole number in [8000, 48000]");
    rate = *r;
  }
  const auto it = j.find("interimResults");
  interim_ = it != j.end() && it->is_boolean() && it->get<bool>();
  language_ = string_field(j, "language").value_or("");
  started_ = true;
  call_plan plan;
  plan.start.source = "jambonz_stt";
  plan.start.channel_labels = {"caller"};
  plan.start.metadata = {{"language", language_}, {"interimResults", interim_}, {"sampleRateHz", rate}};
  plan.codec = "pcm_s16le";
  plan.sample_rate = static_cast<int>(rate);
  switch_step step;
  step.open = std::move(plan);
  return step;
}

switch_step jambonz_stt_protocol::on_binary(std::span<const uint8_t> bytes) {
  if (!started_) return stt_error(close_code::policy, "binary audio before the start message");
  switch_step step;
  if (!stopped_ && !bytes.empty()) step.audio.push_back({0, std::vector<uint8_t>(bytes.begin(), bytes.end())});
  return step;
}

std::vector<std::string> jambonz_stt_protocol::on_result(int, const actors::transcript_event& ev) {
  if (!ev.is_final && !interim_) return {};
  if (ev.is_final && ev.text.empty()) return {};
  nlohmann::json reply{{"type", "transcription"},
                       {"is_final", ev.is_final},
                       {"alternatives", {{{"transcript", ev.text}, {"confidence", mean_confidence(ev)}}}},
                       {"channel", result_channel}};
  if (!language_.empty()) reply["language"] = language_;
  return {reply.dump()};
}

}  // namespace sluice::net::switches
