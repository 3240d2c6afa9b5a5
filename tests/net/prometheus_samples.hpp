#pragma once
// /metrics as prometheus_client's own text parser reads it (python3-prometheus-client), so the
// exposition is checked by the field's parser rather than by our own reading of it.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "tests/common/audio_tools.hpp"  // temp_dir
#include "tests/common/command.hpp"      // run_capture

namespace sluice::test {

// One line per sample whose name starts with one of `prefixes` (the items of a Python tuple, e.g.
// "'sluice_webhook'" or "'sluice_ws_', 'sluice_server_'"): "<family type> <sample name> <the
// value of label `label`, '-' without it> <value as an integer>". Fails the test when the parser
// cannot read `body`.
inline std::string prometheus_samples(const temp_dir& dir, const std::string& body, const std::string& prefixes,
                                      const std::string& label) {
  const auto file = dir.file("metrics.txt");
  std::ofstream(file) << body;
  const auto parsed = run_capture(
      "/usr/bin/python3 -c \"from prometheus_client.parser import text_string_to_metric_families as p\n"
      "for f in p(open('" + file + "').read()):\n"
      "  for x in f.samples:\n"
      "    if x.name.startswith((" + prefixes + ",)):\n"
      "      print(f.type, x.name, x.labels.get('" + label + "', '-'), int(x.value))\" 2>&1");
  REQUIRE_MESSAGE(parsed.status == 0, parsed.out);
  return parsed.out;
}

}  // namespace sluice::test
