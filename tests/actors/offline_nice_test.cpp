// Offline channels ([engine] offline_nice, issue 11 point 5): a channel opened with
// channel_request::offline runs on a thread of its own at the configured nice value, so that under
// contention it yields to live channels and lanes; a live channel does not. The nice value is read
// back from the kernel (/proc/self/task/<tid>/stat), not from the engine.
#include "tests/actors/engine_test_util.hpp"
#include "tests/common/poll_until.hpp"
#include "tests/common/proc_threads.hpp"

#include <fstream>
#include <sstream>

using namespace sluice;
using namespace sluice::actors;

namespace {
// Nice values of this process's threads named `name`.
std::vector<int> nice_of_threads(const std::string& name) {
  std::vector<int> out;
  for (const auto& t : test::threads_of_this_process()) {
    if (t.name != name) continue;
    std::ifstream stat("/proc/self/task/" + std::to_string(t.tid) + "/stat");
    std::string line;
    std::getline(stat, line);
    // After "pid (comm) ": state is field 3, nice field 19 (proc(5)).
    std::stringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19 && rest >> field; ++i)
      if (i == 19) out.push_back(std::stoi(field));
  }
  return out;
}

std::size_t threads_now() { return test::threads_of_this_process().size(); }

// Waits until channel `id` has reported to the metrics actor (it ran, on whatever thread).
bool reported(engine& e, channel_id id) {
  return test::poll_until([&] { return e.snapshot().find("\"channel/" + std::to_string(id) + "\"") != std::string::npos; });
}

std::unique_ptr<engine> start(int nice) {
  auto cfg = test::base_config();
  cfg.engine.lanes = 1;
  cfg.engine.offline_nice = nice;
  return engine::start(test::resources(cfg));
}
}  // namespace

TEST_SUITE("offline nice") {
  TEST_CASE("an offline channel runs on its own thread at offline_nice, a live one does not get one") {
    auto e = start(10);
    caf::scoped_actor self{e->system()};
    // A first live channel: once it has reported, the supervisor and its lanes are all up.
    auto warm = e->open(channel_request{}, caf::actor_cast<caf::actor>(self));
    REQUIRE(warm.ok);
    REQUIRE(reported(*e, warm.channel));
    const auto before = threads_now();
    channel_request live;
    auto l = e->open(live, caf::actor_cast<caf::actor>(self));
    REQUIRE(l.ok);
    REQUIRE(reported(*e, l.channel));
    CHECK(threads_now() == before);  // the live channel runs on the shared scheduler
    channel_request file;
    file.offline = true;
    auto f = e->open(file, caf::actor_cast<caf::actor>(self));
    REQUIRE(f.ok);
    REQUIRE(test::poll_until([&] { return nice_of_threads("sluice-offline").size() == 1; }));
    CHECK(nice_of_threads("sluice-offline") == std::vector<int>{10});
    CHECK(threads_now() == before + 1);  // the offline channel's own thread, and only it
    for (auto* h : {&warm, &l, &f}) self->send(h->handle, end_atom::value);
  }

  TEST_CASE("offline_nice = 0: an offline channel stays on the shared scheduler, with no thread of its own") {
    auto e = start(0);
    caf::scoped_actor self{e->system()};
    auto warm = e->open(channel_request{}, caf::actor_cast<caf::actor>(self));
    REQUIRE(warm.ok);
    REQUIRE(reported(*e, warm.channel));
    const auto before = threads_now();
    channel_request file;
    file.offline = true;
    auto f = e->open(file, caf::actor_cast<caf::actor>(self));
    REQUIRE(f.ok);
    // Its first report says it started (the actor ran): no thread was added for it.
    REQUIRE(reported(*e, f.channel));
    CHECK(threads_now() == before);
    CHECK(nice_of_threads("sluice-offline").empty());
    for (auto* h : {&warm, &f}) self->send(h->handle, end_atom::value);
  }
}
