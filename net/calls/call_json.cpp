#include "net/calls/call_json.hpp"

#include <cstdio>
#include <ctime>

namespace sluice::net::calls {

using json = nlohmann::json;

namespace {

constexpr int64_t ms_per_s = 1000;

json channels_json(const call_record& c, bool with_results) {
  json out = json::array();
  for (std::size_t i = 0; i < c.channels.size(); ++i) {
    const auto& ch = c.channels[i];
    json j{{"channel", i}, {"label", ch.label}};
    if (with_results) {
      json finals = json::array();
      for (const auto& f : ch.finals) finals.push_back(final_json(f));
      j["partial"] = ch.partial;
      j["finals"] = std::move(finals);
    } else {
      j["finals"] = ch.finals.size();
    }
    out.push_back(std::move(j));
  }
  return out;
}

json head_json(const call_record& c) {
  return json{{"id", c.id},
              {"source", c.start.source},
              {"tenant", c.start.tenant},
              {"external_id", c.start.external_id},
              {"live", c.live},
              {"began_at", iso_utc(c.began)},
              {"ended_at", c.live ? json(nullptr) : json(iso_utc(c.ended))},
              {"end_reason", c.end_reason},
              {"metadata", c.start.metadata}};
}

}  // namespace

std::string iso_utc(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / ms_per_s - (ms % ms_per_s < 0 ? 1 : 0));
  const auto frac = static_cast<int>(((ms % ms_per_s) + ms_per_s) % ms_per_s);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];  // room for any int fields (the compiler checks the worst case)
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return buf;
}

json word_json(const actors::word_event& w) {
  return json{{"word", w.word}, {"start_ms", w.start_ms}, {"end_ms", w.end_ms}, {"confidence", w.confidence}};
}

// The display form (ITN, punctuation, casing, redaction) beside the lexical one, as every other
// output carries it (net/result_json.hpp).
static void add_display(json& j, const actors::transcript_event& ev) {
  json words = json::array();
  for (const auto& w : ev.display_words) words.push_back(word_json(w));
  json red = json::array();
  for (const auto& r : ev.redactions) red.push_back({{"start_ms", r.start_ms}, {"end_ms", r.end_ms}, {"kind", r.kind}});
  j["display_text"] = ev.display_text;
  j["display_words"] = std::move(words);
  j["redactions"] = std::move(red);
}

json final_json(const actors::transcript_event& ev) {
  json words = json::array();
  for (const auto& w : ev.words) words.push_back(word_json(w));
  json j{{"utterance", ev.utterance}, {"start_ms", ev.start_ms}, {"end_ms", ev.end_ms}, {"text", ev.text},
         {"words", std::move(words)}};
  add_display(j, ev);
  if (!ev.error.empty()) j["error"] = ev.error;
  return j;
}

json event_json(const call_event& ev) {
  return json{{"type", ev.type}, {"channel", ev.channel}, {"at_ms", ev.at_ms}, {"data", ev.data}};
}

json call_json(const call_record& c) {
  json j = head_json(c);
  j["channels"] = channels_json(c, true);
  json events = json::array();
  for (const auto& e : c.events) events.push_back(event_json(e));
  j["events"] = std::move(events);
  if (c.events_dropped > 0) j["events_dropped"] = c.events_dropped;
  return j;
}

json call_summary_json(const call_record& c) {
  json j = head_json(c);
  j["channels"] = channels_json(c, false);
  j["events"] = c.events.size();
  if (c.events_dropped > 0) j["events_dropped"] = c.events_dropped;
  return j;
}

json update_json(const call_update& u) {
  switch (u.kind) {
    case update_kind::call_start: {
      json j{{"type", "call_start"}, {"call", u.id}, {"tenant", u.tenant}};
      if (u.call) {
        j["source"] = u.call->start.source;
        j["external_id"] = u.call->start.external_id;
        j["channels"] = u.call->start.channel_labels;
        j["metadata"] = u.call->start.metadata;
        j["began_at"] = iso_utc(u.call->began);
      }
      return j;
    }
    case update_kind::partial:
    case update_kind::final: {
      const bool fin = u.kind == update_kind::final;
      json j{{"type", fin ? "final" : "partial"}, {"call", u.id},          {"tenant", u.tenant},
             {"channel", u.channel},              {"label", u.label},     {"utterance", u.result.utterance},
             {"text", u.result.text},             {"start_ms", u.result.start_ms}, {"end_ms", u.result.end_ms}};
      if (fin) {
        json words = json::array();
        for (const auto& w : u.result.words) words.push_back(word_json(w));
        j["words"] = std::move(words);
      }
      add_display(j, u.result);
      if (!u.result.error.empty()) j["error"] = u.result.error;
      return j;
    }
    case update_kind::event:
      return json{{"type", "event"}, {"call", u.id}, {"tenant", u.tenant},
                  {"event", u.event ? event_json(*u.event) : json::object()}};
    case update_kind::call_end: {
      json j{{"type", "call_end"}, {"call", u.id}, {"tenant", u.tenant}};
      if (u.call) {
        j["reason"] = u.call->end_reason;
        j["ended_at"] = iso_utc(u.call->ended);
        j["summary"] = call_summary_json(*u.call);
      }
      return j;
    }
    case update_kind::metadata: return nullptr;
  }
  return nullptr;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace sluice::net::calls
