// A refused channel closes a WebSocket session by the refusal's code (actors::refusal), set where
// the refusal is made, never by the words of its reason: a bad request whose reason happens to
// say "full" is still a bad request, and a full engine is "overloaded" with close 1013.
#include "tests/net/honest_stream.hpp"

#include <caf/all.hpp>

#include "net/refusal_status.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

const std::string end_msg = R"({"type":"end"})";

void expect_error(const ws_result& r, const std::string& code, int close_code) {
  REQUIRE_MESSAGE(!r.messages.empty(), "no message; connection ended with: " << r.error);
  const auto& m = r.messages.back();
  CHECK_MESSAGE(m.value("code", std::string()) == code, m.dump());
  CHECK(r.close_code == close_code);
}

}  // namespace

TEST_SUITE("refusal status") {
  TEST_CASE("each refusal code maps to its WebSocket error word and close code") {
    using actors::refusal;
    CHECK(net::ws_error_of(refusal::overloaded) == "overloaded");
    CHECK(net::ws_error_of(refusal::shutting_down) == "overloaded");
    CHECK(net::ws_error_of(refusal::unavailable) == "overloaded");
    CHECK(net::ws_error_of(refusal::bad_request) == "bad_request");
    CHECK(net::ws_error_of(refusal::internal) == "internal");
    CHECK(static_cast<int>(net::ws_close_of(refusal::overloaded)) == 1013);
    CHECK(static_cast<int>(net::ws_close_of(refusal::shutting_down)) == 1013);
    CHECK(static_cast<int>(net::ws_close_of(refusal::unavailable)) == 1013);
    CHECK(static_cast<int>(net::ws_close_of(refusal::bad_request)) == 1003);
    CHECK(static_cast<int>(net::ws_close_of(refusal::internal)) == 1011);
    CHECK(actors::http_status(refusal::overloaded) == 503);
    CHECK(actors::http_status(refusal::bad_request) == 400);
    CHECK(actors::http_status(refusal::internal) == 500);
  }

  TEST_CASE("a bad request whose reason contains the word full is bad_request 1003, not overloaded") {
    // The engine refuses the weight with a reason quoting the hotword: "hotword \"full -4\": ...".
    served s;
    const auto r = ws_session(s.port, "/v1/stream",
                              {R"({"type":"start","sample_rate":8000,"hotwords":["full -4"]})", end_msg}, {}, {});
    REQUIRE(!r.messages.empty());
    CHECK(r.messages.back().value("reason", std::string()).find("full") != std::string::npos);
    expect_error(r, "bad_request", 1003);
  }

  TEST_CASE("an engine at max_channels closes a new stream as overloaded with 1013") {
    config::sluice_config cfg;
    cfg.engine.max_channels = 1;
    served s(cfg);
    caf::scoped_actor self{s.engine->system()};
    const auto held = s.engine->open({}, caf::actor_cast<caf::actor>(self));  // the only slot
    REQUIRE(held.ok);
    expect_error(ws_session(s.port, "/v1/stream", {honest_start, end_msg}, {}, {}), "overloaded", 1013);
    caf::anon_send(held.handle, actors::abort_atom::value);
  }
}
