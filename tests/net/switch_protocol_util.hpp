#pragma once
// Helpers for the pure switch-protocol tests: parse the replies of a step, make a transcript event.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "net/switches/switch_protocol.hpp"

namespace sluice::test {

inline nlohmann::json parsed(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), text);
  return j;
}

inline actors::transcript_event final_event(std::string text, int64_t utterance = 0) {
  actors::transcript_event ev;
  ev.utterance = utterance;
  ev.is_final = true;
  ev.text = std::move(text);
  ev.start_ms = 1200;
  ev.end_ms = 2450;
  ev.words = {{"hello", 1200, 1600, 0.5f}, {"there", 1700, 2450, 1.0f}};
  return ev;
}

inline std::string error_reason(const net::switches::switch_step& s) {
  REQUIRE(s.error.has_value());
  return s.error->reason;
}

}  // namespace sluice::test
