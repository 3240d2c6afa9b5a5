// Tenants' hotwords swapped while streams run (issue 13): a name the default model misses
// without biasing ("karpinski", as in the CLI's hotword test) is spoken with espeak-ng; the
// tenant file gains it as a hotword while a stream of that tenant and three loaded streams run.
// After the swap: the running stream's next utterance and a new stream recognise it, another
// tenant's stream does not, a broken file keeps the last good list, every utterance of every
// stream gets its final, and the engine never restarts. Reloads are asked for explicitly
// (engine::reload_tenants), never waited for; the watcher's own timer is set out of the test's
// reach, or a poll could take a write before the explicit reload (which then answers 0 for the
// broken file) or read acme.toml between its truncation and its text (an empty, valid list that
// would become the "last good" one).

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "tests/actors/engine_test_util.hpp"
#include "tests/common/audio_tools.hpp"

using namespace sluice;
using namespace sluice::actors;

namespace {

constexpr const char* name = "karpinski";

// Replaces the file whole (written aside, then renamed over it), as an operator's tool should:
// a reader never sees it truncated or half written.
void write_tenant(const std::string& path, const std::string& text, int tick_s) {
  const std::string next = path + ".next";  // not *.toml: the store never reads it
  std::ofstream(next, std::ios::trunc) << text;
  // A later modification time than any earlier write, whatever the clock's resolution.
  std::filesystem::last_write_time(next, std::filesystem::last_write_time(next) + std::chrono::seconds(tick_s));
  std::filesystem::rename(next, path);
}

struct events {
  std::map<channel_id, std::vector<transcript_event>> finals;
  std::map<channel_id, int> errors;
  std::vector<channel_id> drained;
};

// Receives until `done()` holds (or fails the test after the timeout).
template <class Done>
void receive_until(caf::scoped_actor& self, events& ev, Done done, std::chrono::seconds timeout = std::chrono::seconds(180)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    REQUIRE_MESSAGE(left.count() > 0, "timed out waiting for results");
    self->receive(
        [&](transcript_event& e) {
          if (!e.error.empty()) ++ev.errors[e.channel];
          else if (e.is_final) ev.finals[e.channel].push_back(std::move(e));
        },
        [&](drained_atom, channel_id id) { ev.drained.push_back(id); }, caf::after(left) >> [] {});
  }
}

}  // namespace

TEST_SUITE("engine") {
  TEST_CASE("tenant hotwords hot-swapped under load: new and running streams get them, nothing is lost") {
    test::temp_dir tmp;
    const auto wav = tmp.file("name.wav");
    REQUIRE(test::espeak(std::string("my name is, ") + name + ".", wav, "en-us", 140));
    const auto dir = tmp.file("tenants");
    std::filesystem::create_directories(dir);
    const auto acme = dir + "/acme.toml";
    write_tenant(acme, "hotwords = []\n", 0);
    write_tenant(dir + "/other.toml", "hotwords = [\"vanderbilt 5\"]\n", 0);

    auto cfg = test::base_config();
    cfg.postproc.tenants_dir = dir;
    // Only this test's reload_tenants() calls reread the directory (the watcher's first poll comes
    // after an hour, the most the setting allows): each reload's answer is about the write before it.
    cfg.postproc.tenants_poll_ms = 3600000;
    auto speech = dsp::prepare_file(wav, cfg);
    REQUIRE(speech.has_value());
    const auto& samples = speech->channels.at(0).samples;
    auto e = engine::start(test::resources(cfg));
    caf::scoped_actor self{e->system()};
    events ev;
    auto req = [](const std::string& tenant) {
      channel_request r;
      r.tenant = tenant;
      r.partials = false;
      return r;
    };
    auto say = [&](const open_reply& ch) { caf::anon_send(ch.handle, segment_atom::value, samples, int64_t{0}); };
    auto finals_of = [&](const open_reply& ch) { return ev.finals[ch.channel].size(); };

    // Load: three streams of the tenant with the call's segments in flight across the swap.
    const auto segs = test::call_segments();
    std::vector<open_reply> load;
    for (int i = 0; i < 3; ++i) {
      load.push_back(test::open_ok(*e, self, req("acme")));
      for (const auto& s : segs) caf::anon_send(load.back().handle, segment_atom::value, s.samples, s.start_sample);
    }

    const auto running = test::open_ok(*e, self, req("acme"));
    say(running);
    receive_until(self, ev, [&] { return finals_of(running) == 1; });
    const auto before = ev.finals[running.channel][0].text;
    CHECK_MESSAGE(before.find(name) == std::string::npos, before);

    write_tenant(acme, std::string("hotwords = [\"") + name + " 5\"]\n", 1);
    CHECK(e->reload_tenants() == 0);

    say(running);  // its next utterance
    const auto after_open = test::open_ok(*e, self, req("acme"));
    say(after_open);
    const auto other = test::open_ok(*e, self, req("other"));
    say(other);
    receive_until(self, ev, [&] { return finals_of(running) == 2 && finals_of(after_open) == 1 && finals_of(other) == 1; });
    CHECK_MESSAGE(ev.finals[running.channel][1].text.find(name) != std::string::npos, ev.finals[running.channel][1].text);
    CHECK_MESSAGE(ev.finals[after_open.channel][0].text.find(name) != std::string::npos, ev.finals[after_open.channel][0].text);
    CHECK_MESSAGE(ev.finals[other.channel][0].text.find(name) == std::string::npos, ev.finals[other.channel][0].text);

    // A broken file: reported, the last good list stays.
    write_tenant(acme, "hotwords = [\"unterminated\n", 2);
    CHECK(e->reload_tenants() == 1);
    const auto after_broken = test::open_ok(*e, self, req("acme"));
    say(after_broken);
    receive_until(self, ev, [&] { return finals_of(after_broken) == 1; });
    CHECK_MESSAGE(ev.finals[after_broken.channel][0].text.find(name) != std::string::npos,
                  ev.finals[after_broken.channel][0].text);

    // Nothing lost: every stream drains with a final for every utterance it was sent.
    std::vector<open_reply> all = load;
    for (const auto& c : {running, after_open, other, after_broken}) all.push_back(c);
    for (const auto& c : all) caf::anon_send(c.handle, end_atom::value);
    receive_until(self, ev, [&] { return ev.drained.size() == all.size(); });
    for (const auto& c : load) CHECK(finals_of(c) == segs.size());
    CHECK(finals_of(running) == 2);
    CHECK(ev.errors.empty());
  }
}
