#pragma once
/// The engine's own transcript of an audio file read directly: `sluice transcribe --format json`
/// (the CLI built with the tests, SLUICE_CLI, in its default configuration, with
/// models/default), the words of every segment of one channel joined by spaces.
///
/// Transport tests (SIP, RTSP) compare what came over the wire with it: G.711 through RTP
/// carries the very samples of a mu-law file, so any difference is the transport's (a lost,
/// reordered, duplicated or mis-timed packet), whatever the model. They check the true
/// transcript separately, with a word error bound, since the model's own errors are not theirs.
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "tests/common/command.hpp"

namespace sluice::test {

inline std::string file_transcript(const std::string& wav, std::size_t channel = 0) {
  const std::string cmd = std::string(SLUICE_CLI) + " --model.dir=" SLUICE_SOURCE_DIR "/models/default" +
                          " transcribe --format json '" + wav + "' 2>/dev/null";
  const auto [status, out] = run_capture(cmd);
  REQUIRE_MESSAGE(status == 0, cmd << " failed: " << out);
  const auto doc = nlohmann::json::parse(out, nullptr, false);
  REQUIRE_MESSAGE(!doc.is_discarded(), cmd << " printed no JSON: " << out);
  REQUIRE(doc["channels"].size() > channel);
  std::string text;
  for (const auto& s : doc["channels"][channel]["segments"]) {
    const auto t = s.value("text", std::string());
    if (!t.empty()) text += (text.empty() ? "" : " ") + t;
  }
  return text;
}

}  // namespace sluice::test
