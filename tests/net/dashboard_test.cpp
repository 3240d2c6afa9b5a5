// The dashboard in headless Chromium (Debian's chromium): while a channel is streaming, the page
// served at / polls /v1/actors and shows the engine live (status, live channels, audio seconds,
// the batcher's row). And /metrics parses with the Prometheus project's own Python parser.
#include "tests/net/net_test_util.hpp"

#include <cstdio>
#include <fstream>
#include <regex>
#include <thread>

#include "actors/latency_histogram.hpp"
#include "actors/messages.hpp"
#include "tests/common/audio_tools.hpp"
#include "tests/common/command.hpp"

using namespace sluice;
using namespace sluice::test;
using sluice::test::temp_dir;

namespace {

std::string capture(const std::string& cmd) { return sluice::test::run_capture(cmd).out; }

}  // namespace

TEST_SUITE("dashboard") {
  TEST_CASE("headless Chromium renders live engine numbers while a stream runs") {
    served s;
    caf::scoped_actor self{s.engine->system()};
    actors::channel_request req;
    req.sample_rate = 8000;
    req.codec = "pcm_s16le";
    auto ch = s.engine->open(req, caf::actor_cast<caf::actor>(self));
    REQUIRE(ch.ok);
    const auto frames = call_pcm16_frames();
    for (std::size_t i = 0; i < 60 && i < frames.size(); ++i) self->send(ch.handle, actors::audio_atom::value, frames[i]);
    // The page shows what the metrics actor has: wait until the channel's report carries audio.
    REQUIRE(poll_until([&] {
      auto snap = nlohmann::json::parse(s.engine->snapshot(), nullptr, false);
      return !snap.is_discarded() && snap.dump().find("channel/1") != std::string::npos &&
             snap["summary"]["audio_s"].is_number() && snap["summary"]["audio_s"].get<double>() > 1.0;
    }));
    const std::string url = "http://127.0.0.1:" + std::to_string(s.port) + "/";
    const std::string dom = capture(
        "timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-background-networking "
        "--disable-component-update --disable-default-apps --disable-sync --disable-extensions --no-first-run "
        "--virtual-time-budget=3000 --dump-dom " + url + " 2>/dev/null");
    REQUIRE_MESSAGE(dom.find("<html") != std::string::npos, "chromium printed no page");
    std::smatch m;
    CHECK(std::regex_search(dom, m, std::regex(R"(id="status">live<)")));
    REQUIRE(std::regex_search(dom, m, std::regex(R"(channels<b>([0-9]+)</b>)")));
    CHECK(std::stoi(m[1]) == 1);
    REQUIRE(std::regex_search(dom, m, std::regex(R"(audio s<b>([0-9.]+)</b>)")));
    CHECK(std::stod(m[1]) > 1.0);
    CHECK(dom.find("<td>lane/0</td>") != std::string::npos);  // the default engine: a lane per core
    CHECK(dom.find("<td>channel/1</td>") != std::string::npos);  // the streams table
    self->send(ch.handle, actors::end_atom::value);
  }

  TEST_CASE("/metrics parses with prometheus_client's text parser") {
    served s;
    const std::string wav = call_wav_bytes();
    REQUIRE(http_request(s.port, http::verb::post, "/v1/transcribe", wav).status == 200);
    // Wait for the report that carries the upload's finals before parsing.
    REQUIRE(poll_until([&] {
      auto snap = nlohmann::json::parse(s.engine->snapshot(), nullptr, false);
      return !snap.is_discarded() && snap["summary"]["finals"].is_number() && snap["summary"]["finals"].get<double>() >= 1;
    }));
    // And two tenants' streams (the upload has none): a channel report of each, as a stream's
    // channel sends them; acme's with one final 120 ms after its utterance ended.
    for (const char* tenant : {"acme", "globex"}) {
      actors::actor_report r;
      r.name = std::string("channel/of-") + tenant;
      r.kind = "channel";
      r.tenant = tenant;
      r.keys = {"audio_ms"};
      r.counts = {tenant == std::string("acme") ? 1500.0 : 2500.0};
      if (tenant == std::string("acme")) {
        actors::latency_histogram h;
        h.add(120);
        r.hist_keys = {std::string(actors::latency_key::final_result)};
        r.hists = {h.counts()};
        r.hist_sums = {h.sum_ms()};
      }
      caf::anon_send(s.engine->metrics(), r);
    }
    REQUIRE(poll_until([&] {
      auto snap = nlohmann::json::parse(s.engine->fresh_snapshot(), nullptr, false);
      return !snap.is_discarded() && snap["tenants"].contains("acme") && snap["tenants"].contains("globex");
    }));
    const auto text = http_request(s.port, http::verb::get, "/metrics").body;
    temp_dir tmp;
    const std::string path = tmp.file("metrics.txt");
    std::ofstream(path) << text;
    const std::string out = capture(
        "/usr/bin/python3 -c \"import sys\nfrom prometheus_client.parser import text_string_to_metric_families as p\n"
        "fams = list(p(open('" + path + "').read()))\nprint(len(fams), sum(len(f.samples) for f in fams))\n"
        "print(' '.join(sorted(f.type for f in fams if f.name.startswith('sluice_channel_final_latency'))))\n"
        "for f in fams:\n"
        "  for x in f.samples:\n"
        "    if f.name.startswith('sluice_tenant_') and (x.name.endswith('_count') or x.name.endswith('_total') or "
        "x.name == 'sluice_tenant_channels' or x.labels.get('le') == '150'):\n"
        "      print('S', f.type, x.name, x.labels['tenant'], x.labels.get('le', '-'), x.value)\" 2>&1");
    std::istringstream is(out);
    int families = 0, samples = 0;
    is >> families >> samples;
    CHECK_MESSAGE(families > 20, out);
    CHECK(samples > families);
    CHECK_MESSAGE(out.find("histogram") != std::string::npos, out);
    // The tenants' series as the parser reads them: a gauge, a counter, a histogram, by tenant label.
    for (const char* line : {"S gauge sluice_tenant_channels acme - 1.0", "S gauge sluice_tenant_channels globex - 1.0",
                             "S counter sluice_tenant_audio_ms_total acme - 1500.0",
                             "S counter sluice_tenant_audio_ms_total globex - 2500.0",
                             "S histogram sluice_tenant_final_latency_milliseconds_count acme - 1.0",
                             "S histogram sluice_tenant_final_latency_milliseconds_bucket acme 150 1.0",
                             "S histogram sluice_tenant_final_latency_milliseconds_count globex - 0.0",
                             "S histogram sluice_tenant_final_latency_milliseconds_bucket globex 150 0.0"})
      CHECK_MESSAGE(out.find(std::string(line) + "\n") != std::string::npos, line, "\n", out);
  }
}
