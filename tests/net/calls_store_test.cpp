// The calls store (net/calls/call_store.hpp): calls survive a restart (a new registry on the same
// file gets them back, a call left live comes back "interrupted"); a process killed with SIGKILL
// in the middle of a call leaves a file SQLite calls intact, with the finished call whole and
// the live one interrupted with every final written before the kill.
#include <doctest/doctest.h>

#include <csignal>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "net/calls/call_store.hpp"
#include "tests/common/audio_tools.hpp"

using namespace sluice;
using namespace sluice::net::calls;

namespace {

actors::transcript_event final_of(const std::string& text, int64_t start_ms, int64_t end_ms, int64_t utt) {
  actors::transcript_event ev;
  ev.is_final = true;
  ev.text = text;
  ev.utterance = utt;
  ev.start_ms = start_ms;
  ev.end_ms = end_ms;
  ev.words.push_back({text, start_ms, end_ms, 0.75f});
  return ev;
}

call_start start_of(const std::string& tenant) {
  call_start s;
  s.source = "twilio";
  s.tenant = tenant;
  s.external_id = "CA123";
  s.channel_labels = {"inbound", "outbound"};
  s.metadata = {{"from", "+15550001"}};
  return s;
}

const call_record* find(const std::vector<call_record>& cs, const std::string& id) {
  for (const auto& c : cs)
    if (c.id == id) return &c;
  return nullptr;
}

// PRAGMA integrity_check of the file, from a connection of the test's own.
std::string integrity(const std::string& path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  std::string out;
  sqlite3_exec(
      db, "PRAGMA integrity_check;",
      [](void* o, int, char** v, char**) {
        *static_cast<std::string*>(o) += v[0] ? v[0] : "";
        return 0;
      },
      &out, nullptr);
  sqlite3_close(db);
  return out;
}

}  // namespace

TEST_SUITE("calls store") {
  TEST_CASE("calls survive a restart: a new registry on the same file gets them back, a live one is interrupted") {
    test::temp_dir dir;
    const auto path = dir.file("data/calls.sqlite");  // the directory is created
    call_id done, live;
    {
      auto store = call_store::open(path, 1000);
      REQUIRE(store.has_value());
      auto old = (*store)->load_recent(10);
      REQUIRE(old.has_value());
      CHECK(old->empty());
      call_registry reg;
      (*store)->attach(reg);
      done = reg.begin(start_of("acme"));
      reg.result(done, 0, final_of("hello there", 100, 900, 0));
      reg.result(done, 1, final_of("good morning", 1200, 2000, 0));
      reg.result(done, 0, final_of("bye", 2500, 2800, 1));
      reg.event(done, call_event{"dtmf", 1, 1900, {{"digit", "7"}}});
      reg.update_metadata(done, {{"to", "+15550002"}});
      reg.end(done, "hangup");
      live = reg.begin(start_of("globex"));
      reg.result(live, 1, final_of("still talking", 0, 400, 0));
      (*store)->flush();
      CHECK((*store)->stats().written == 9);
      CHECK((*store)->stats().dropped == 0);
    }  // the store stops with `live` never ended: as if the process had gone
    auto store = call_store::open(path, 1000);
    REQUIRE(store.has_value());
    auto back = (*store)->load_recent(10);
    REQUIRE(back.has_value());
    REQUIRE(back->size() == 2);
    CHECK((*back)[0].id == live);  // newest first
    call_registry reg;
    reg.restore(std::move(*back));
    const auto d = reg.get(done);
    REQUIRE(d.has_value());
    CHECK_FALSE(d->live);
    CHECK(d->end_reason == "hangup");
    CHECK(d->start.source == "twilio");
    CHECK(d->start.tenant == "acme");
    CHECK(d->start.external_id == "CA123");
    CHECK(d->start.metadata == nlohmann::json({{"from", "+15550001"}, {"to", "+15550002"}}));
    REQUIRE(d->channels.size() == 2);
    CHECK(d->channels[0].label == "inbound");
    CHECK(d->channels[1].label == "outbound");
    REQUIRE(d->channels[0].finals.size() == 2);
    CHECK(d->channels[0].finals[0].text == "hello there");
    CHECK(d->channels[0].finals[0].start_ms == 100);
    CHECK(d->channels[0].finals[0].end_ms == 900);
    REQUIRE(d->channels[0].finals[0].words.size() == 1);
    CHECK(d->channels[0].finals[0].words[0].word == "hello there");
    CHECK(d->channels[0].finals[0].words[0].confidence == doctest::Approx(0.75));
    CHECK(d->channels[0].finals[1].text == "bye");
    CHECK(d->channels[0].finals[1].utterance == 1);
    REQUIRE(d->channels[1].finals.size() == 1);
    CHECK(d->channels[1].finals[0].text == "good morning");
    REQUIRE(d->events.size() == 1);
    CHECK(d->events[0].type == "dtmf");
    CHECK(d->events[0].channel == 1);
    CHECK(d->events[0].at_ms == 1900);
    CHECK(d->events[0].data["digit"] == "7");
    CHECK(d->ended >= d->began);
    const auto l = reg.get(live);
    REQUIRE(l.has_value());
    CHECK_FALSE(l->live);
    CHECK(l->end_reason == interrupted_reason);
    REQUIRE(l->channels[1].finals.size() == 1);
    CHECK(l->channels[1].finals[0].text == "still talking");
    // The file says so too: a third opening finds nothing live to mark.
    auto again = (*store)->load_recent(1);
    REQUIRE(again.has_value());
    REQUIRE(again->size() == 1);
    CHECK((*again)[0].end_reason == interrupted_reason);
  }

  TEST_CASE("a process killed with SIGKILL mid-call leaves a readable store: the finished call whole, the live one interrupted") {
    test::temp_dir dir;
    const auto path = dir.file("calls.sqlite");
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    const int flushed_finals = 5;
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // The child: a registry and its store, one call finished, one live and still writing when
      // the parent kills it. It never returns into doctest.
      close(ready[0]);
      auto store = call_store::open(path, 100000);
      if (!store) _exit(2);
      call_registry reg;
      (*store)->attach(reg);
      const auto a = reg.begin(start_of("acme"));
      reg.result(a, 0, final_of("first call one", 0, 500, 0));
      reg.result(a, 1, final_of("first call two", 600, 900, 0));
      reg.end(a, "hangup");
      const auto b = reg.begin(start_of("acme"));
      for (int i = 0; i < flushed_finals; ++i) reg.result(b, 0, final_of("b" + std::to_string(i), i * 100, i * 100 + 50, i));
      (*store)->flush();
      const std::string msg = a + " " + b + "\n";
      if (write(ready[1], msg.data(), msg.size()) != static_cast<ssize_t>(msg.size())) _exit(3);
      // Keep the store busy until the kill lands: it dies in the middle of writing.
      for (int i = flushed_finals;; ++i) reg.result(b, 0, final_of("b" + std::to_string(i), i * 100, i * 100 + 50, i));
    }
    close(ready[1]);
    std::string msg;
    char ch;
    while (read(ready[0], &ch, 1) == 1 && ch != '\n') msg += ch;
    close(ready[0]);
    REQUIRE_MESSAGE(msg.find(' ') != std::string::npos, "the child failed before its first flush");
    REQUIRE(kill(child, SIGKILL) == 0);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
    const std::string a = msg.substr(0, msg.find(' ')), b = msg.substr(msg.find(' ') + 1);

    auto store = call_store::open(path, 100);
    REQUIRE(store.has_value());
    auto back = (*store)->load_recent(10);
    REQUIRE(back.has_value());
    CHECK(integrity(path) == "ok");
    REQUIRE(back->size() == 2);
    const auto* ca = find(*back, a);
    const auto* cb = find(*back, b);
    REQUIRE(ca != nullptr);
    REQUIRE(cb != nullptr);
    CHECK(ca->end_reason == "hangup");
    REQUIRE(ca->channels.size() == 2);
    REQUIRE(ca->channels[0].finals.size() == 1);
    CHECK(ca->channels[0].finals[0].text == "first call one");
    REQUIRE(ca->channels[1].finals.size() == 1);
    CHECK(ca->channels[1].finals[0].text == "first call two");
    CHECK(cb->end_reason == interrupted_reason);
    // Every final written before the flush, and after them an unbroken run (a transaction is
    // all or nothing): b0, b1, ... with no gap.
    const auto& fb = cb->channels[0].finals;
    REQUIRE(fb.size() >= static_cast<std::size_t>(flushed_finals));
    for (std::size_t i = 0; i < fb.size(); ++i) CHECK(fb[i].text == "b" + std::to_string(i));
    MESSAGE("finals of the live call in the store after the kill: " << fb.size());
  }

  TEST_CASE("the store's path: store_file under data_dir unless absolute") {
    config::calls_config c;
    c.data_dir = "/var/lib/sluice";
    c.store_file = "calls.sqlite";
    CHECK(call_store::path_of(c) == "/var/lib/sluice/calls.sqlite");
    c.store_file = "/srv/calls.db";
    CHECK(call_store::path_of(c) == "/srv/calls.db");
  }

  TEST_CASE("a file that is not SQLite is refused with the path in the message") {
    test::temp_dir dir;
    const auto path = dir.file("not.sqlite");
    {
      std::ofstream(path) << "this is not a database, just text that is long enough to have a header........";
    }
    auto store = call_store::open(path, 10);
    REQUIRE_FALSE(store.has_value());
    CHECK(store.error().code == errc::io);
    CHECK(store.error().message.find(path) != std::string::npos);
  }
}
