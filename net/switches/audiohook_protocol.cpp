#include "net/switches/audiohook_protocol.hpp"

#include <cstdio>

#include "net/switches/switch_json.hpp"

namespace sluice::net::switches {

namespace {

constexpr int audiohook_rate = 8000;
constexpr const char* protocol_version = "2";
constexpr int ms_per_s = 1000;

std::string label_of(const std::string& channel) { return channel == "external" ? "customer" : "agent"; }

// Whether `offer` is PCMU at 8 kHz with the channels `want`.
bool offer_is(const nlohmann::json& offer, const std::vector<std::string>& want) {
  if (!offer.is_object() || string_field(offer, "format") != "PCMU" || integer_field(offer, "rate") != audiohook_rate)
    return false;
  const auto it = offer.find("channels");
  if (it == offer.end() || !it->is_array() || it->size() != want.size()) return false;
  for (std::size_t i = 0; i < want.size(); ++i)
    if ((*it)[i] != want[i]) return false;
  return true;
}

}  // namespace

std::string iso_duration(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "PT%lld.%02lldS", static_cast<long long>(ms / ms_per_s),
                static_cast<long long>((ms % ms_per_s) / 10));
  return buf;
}

audiohook_protocol::audiohook_protocol(std::string session_id) : session_id_(std::move(session_id)) {}

std::string audiohook_protocol::new_uuid() {
  // A version 4 UUID (RFC 4122 section 4.4).
  const uint64_t hi = (rng_() & 0xFFFFFFFFFFFF0FFFull) | 0x4000ull;
  const uint64_t lo = (rng_() & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08llx-%04llx-%04llx-%04llx-%012llx", static_cast<unsigned long long>(hi >> 32),
                static_cast<unsigned long long>((hi >> 16) & 0xFFFF), static_cast<unsigned long long>(hi & 0xFFFF),
                static_cast<unsigned long long>(lo >> 48), static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFull));
  return buf;
}

std::string audiohook_protocol::reply(const std::string& type, nlohmann::json parameters) {
  return nlohmann::json{{"version", protocol_version},
                        {"id", session_id_},
                        {"type", type},
                        {"seq", ++server_seq_},
                        {"clientseq", client_seq_},
                        {"parameters", std::move(parameters)}}
      .dump();
}

switch_step audiohook_protocol::error(const std::string& reason) {
  return refuse(close_code::policy, reason, reply("disconnect", {{"reason", "error"}, {"info", reason}}));
}

switch_step audiohook_protocol::on_text(std::string_view text) {
  auto j = parse_object(text);
  if (!j) return error(j.error());
  if (string_field(*j, "version") != protocol_version) return error("version must be \"2\"");
  const auto type = string_field(*j, "type");
  if (!type) return error("a message without a string \"type\"");
  const auto seq = integer_field(*j, "seq");
  if (!seq || *seq != client_seq_ + 1)
    return error("seq " + (seq ? std::to_string(*seq) : std::string("missing")) + " where " +
                 std::to_string(client_seq_ + 1) + " was due");
  client_seq_ = *seq;
  const auto id = string_field(*j, "id");
  if (!id) return error("a message without a string \"id\"");
  if (session_id_.empty()) session_id_ = *id;
  else if (*id != session_id_) return error("the session id changed to \"" + *id + "\"");
  const auto params = j->contains("parameters") && (*j)["parameters"].is_object() ? (*j)["parameters"]
                                                                                   : nlohmann::json::object();
  if (*type == "open") return open(*j);
  if (!opened_) return error("\"" + *type + "\" before open");
  switch_step step;
  if (*type == "ping") {
    step.replies.push_back(reply("pong", nlohmann::json::object()));
  } else if (*type == "update") {
    if (auto lang = string_field(params, "language")) {
      language_ = *lang;
      step.metadata = nlohmann::json{{"language", *lang}};
    }
    step.replies.push_back(reply("updated", nlohmann::json::object()));
  } else if (*type == "paused" || *type == "resumed" || *type == "discarded" || *type == "error") {
    calls::call_event ev;
    ev.type = *type;
    ev.data = params;
    if (auto pos = string_field(*j, "position")) ev.data["position"] = *pos;
    step.events.push_back(std::move(ev));
  } else if (*type == "close") {
    if (!closing_) step.end = "close (" + string_field(params, "reason").value_or("no reason") + ")";
    closing_ = true;
  } else {
    return error("unknown message type \"" + *type + "\"");
  }
  return step;
}

switch_step audiohook_protocol::open(const nlohmann::json& msg) {
  if (opened_) return error("a second open");
  const auto& p = msg.contains("parameters") ? msg["parameters"] : nlohmann::json();
  if (!p.is_object()) return error("open without its parameters");
  const auto media = p.find("media");
  if (media == p.end() || !media->is_array()) return error("open without a media array");
  nlohmann::json chosen;
  for (const auto& offer : *media)
    if (offer_is(offer, {"external", "internal"})) {
      chosen = offer;
      break;
    }
  if (chosen.is_null())
    for (const auto& offer : *media)
      if (offer_is(offer, {"external"}) || offer_is(offer, {"internal"})) {
        chosen = offer;
        break;
      }
  if (chosen.is_null()) return error("no media offer of PCMU at 8000 Hz: " + media->dump());
  opened_ = true;
  for (const auto& c : chosen["channels"]) channel_names_.push_back(c.get<std::string>());
  stereo_ = channel_names_.size() == 2;
  language_ = string_field(p, "language").value_or("");
  call_plan plan;
  plan.start.source = "audiohook";
  plan.start.external_id = string_field(p, "conversationId").value_or("");
  for (const auto& c : channel_names_) plan.start.channel_labels.push_back(label_of(c));
  auto& meta = plan.start.metadata;
  meta["sessionId"] = session_id_;
  for (const char* key : {"organizationId", "conversationId", "participant", "language", "customConfig"})
    if (p.contains(key)) meta[key] = p[key];
  meta["media"] = chosen;
  plan.codec = "mulaw";
  plan.sample_rate = audiohook_rate;
  switch_step step;
  step.open = std::move(plan);
  step.replies.push_back(reply("opened", {{"media", nlohmann::json::array({chosen})}, {"startPaused", false}}));
  return step;
}

switch_step audiohook_protocol::on_binary(std::span<const uint8_t> bytes) {
  if (!opened_) return error("audio before opened");
  switch_step step;
  if (closing_ || bytes.empty()) return step;
  if (!stereo_) {
    step.audio.push_back({0, std::vector<uint8_t>(bytes.begin(), bytes.end())});
    return step;
  }
  auto [external, internal] = split_.split(bytes);
  if (!external.empty()) step.audio.push_back({0, std::move(external)});
  if (!internal.empty()) step.audio.push_back({1, std::move(internal)});
  return step;
}

std::vector<std::string> audiohook_protocol::on_result(int index, const actors::transcript_event& ev) {
  // Partials are not sent: AudioHook consumers act on final transcripts.
  if (!ev.is_final || ev.text.empty() || index < 0 || index >= static_cast<int>(channel_names_.size())) return {};
  auto tokens = nlohmann::json::array();
  for (const auto& w : ev.words)
    tokens.push_back({{"type", "word"},
                      {"value", w.word},
                      {"confidence", w.confidence},
                      {"offset", iso_duration(w.start_ms)},
                      {"duration", iso_duration(w.end_ms - w.start_ms)}});
  nlohmann::json alternative{{"confidence", mean_confidence(ev)},
                             {"interpretations", {{{"type", "display"}, {"transcript", ev.text}, {"tokens", tokens}}}}};
  if (!language_.empty()) alternative["languages"] = {language_};
  nlohmann::json data{{"id", new_uuid()},
                      {"channel", channel_names_[static_cast<std::size_t>(index)]},
                      {"isFinal", true},
                      {"offset", iso_duration(ev.start_ms)},
                      {"duration", iso_duration(ev.end_ms - ev.start_ms)},
                      {"alternatives", {alternative}}};
  return {reply("event", {{"entities", {{{"type", "transcript"}, {"data", std::move(data)}}}}})};
}

drained_step audiohook_protocol::on_drained() {
  drained_step d;
  d.replies.push_back(reply("closed", nlohmann::json::object()));
  return d;
}

}  // namespace sluice::net::switches
