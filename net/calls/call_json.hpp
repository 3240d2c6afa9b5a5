#pragma once
/// The JSON documents of calls (GET /v1/calls, GET /v1/calls/{id}, WS /v1/events, the webhook).
/// Times of day are UTC ISO 8601 with ms ("2026-12-01T02:00:00.123Z"); *_ms fields inside a call
/// are ms from the start of its channel's audio (results) or of the call (events).
///
/// A call (GET /v1/calls/{id}, the webhook's POST body):
///   {"id": "...", "source": "upload", "tenant": "acme", "external_id": "", "live": false,
///    "began_at": "...", "ended_at": "..." | null, "end_reason": "completed" | "" (live),
///    "metadata": {...},
///    "channels": [{"channel": 0, "label": "agent", "partial": "" (an open utterance's newest text),
///                  "finals": [{"utterance": 0, "start_ms": 120, "end_ms": 1480, "text": "...",
///                              "words": [{"word": "...", "start_ms": 120, "end_ms": 400,
///                                         "confidence": 0.93}], "error": "..." (only when lost)}]}],
///    "events": [{"type": "dtmf", "channel": -1, "at_ms": 5230, "data": {...}}]}
/// A call in a list (GET /v1/calls): the same without "partial", "finals" and "events"; each
/// channel has "finals": its number of finals, and the call "events": its number of events.
///   GET /v1/calls answers {"calls": [call, ...]} newest first.
/// A live update (WS /v1/events), one JSON text message each, by "type":
///   call_start  {"type", "call", "tenant", "source", "external_id", "channels": [labels],
///                "metadata", "began_at"}
///   partial     {"type", "call", "tenant", "channel", "label", "utterance", "text", "start_ms",
///   final        "end_ms", "words": [...] (final only), "error" (only when lost)}
///   event       {"type", "call", "tenant", "event": {"type", "channel", "at_ms", "data"}}
///   call_end    {"type", "call", "tenant", "reason", "ended_at", "summary": a call in a list}

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "net/calls/call_registry.hpp"

namespace sluice::net::calls {

/// "2026-12-01T02:00:00.123Z".
std::string iso_utc(std::chrono::system_clock::time_point t);

nlohmann::json word_json(const actors::word_event& w);
/// One final (or lost utterance) of a channel.
nlohmann::json final_json(const actors::transcript_event& ev);
nlohmann::json event_json(const call_event& ev);
/// The whole call.
nlohmann::json call_json(const call_record& c);
/// The call as GET /v1/calls lists it.
nlohmann::json call_summary_json(const call_record& c);
/// A live update; null for kinds /v1/events does not send (metadata).
nlohmann::json update_json(const call_update& u);

/// `j` as text; bytes that are not UTF-8 (a protocol's metadata) are replaced, never thrown on.
std::string dump(const nlohmann::json& j);

}  // namespace sluice::net::calls
