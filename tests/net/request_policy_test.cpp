// Host and Origin checks without a server: which names and pages are served by default, with
// allow-lists, and when bound to every address.
#include <doctest/doctest.h>

#include "net/http_query.hpp"
#include "net/request_policy.hpp"

using namespace sluice;
using namespace sluice::net;

namespace {

request_policy policy(const std::string& host, const std::string& hosts = "", const std::string& origins = "") {
  config::server_config c;
  c.host = host;
  c.allowed_hosts = hosts;
  c.allowed_origins = origins;
  return request_policy(c);
}

bool allowed(const request_policy& p, const char* host, const char* origin = "") {
  return p.refusal(host, origin).empty();
}

}  // namespace

TEST_SUITE("request policy") {
  TEST_CASE("host_of: port and IPv6 brackets removed, lower case") {
    CHECK(host_of("LocalHost:8080") == "localhost");
    CHECK(host_of("[::1]:8080") == "::1");
    CHECK(host_of("[::1]") == "::1");
    CHECK(host_of("127.0.0.1") == "127.0.0.1");
  }

  TEST_CASE("default on 127.0.0.1: loopback names only, no Host header (HTTP/1.0) is served") {
    const auto p = policy("127.0.0.1");
    for (const char* h : {"127.0.0.1:8080", "localhost", "LOCALHOST:1", "[::1]:8080", "127.0.0.2", ""}) {
      CAPTURE(h);
      CHECK(allowed(p, h));
    }
    for (const char* h : {"evil.example", "evil.example:8080", "10.0.0.5", "localhost.evil.example", "127.0.0.1.nip.io"}) {
      CAPTURE(h);
      CHECK_FALSE(allowed(p, h));
      CHECK(p.refusal(h, "").find("allowed_hosts") != std::string::npos);
    }
  }

  TEST_CASE("bound to another address or to every address, allowed_hosts adds names, * allows any") {
    CHECK(allowed(policy("10.1.2.3"), "10.1.2.3:8080"));
    CHECK_FALSE(allowed(policy("10.1.2.3"), "10.9.9.9"));
    CHECK(allowed(policy("0.0.0.0"), "10.9.9.9:8080"));
    CHECK(allowed(policy("::"), "[fe80::1]:8080"));
    CHECK_FALSE(allowed(policy("0.0.0.0"), "evil.example"));
    CHECK(allowed(policy("0.0.0.0", "asr.example.com, Other.Example"), "other.example:443"));
    CHECK(allowed(policy("127.0.0.1", "*"), "anything.example"));
  }

  TEST_CASE("Origin: none is not a browser, same-host and loopback pages pass, others, and null, get a reason") {
    const auto p = policy("127.0.0.1", "", "https://ops.example.com");
    CHECK(allowed(p, "127.0.0.1:8080", ""));
    CHECK(allowed(p, "127.0.0.1:8080", "http://127.0.0.1:8080"));
    CHECK(allowed(p, "127.0.0.1:8080", "http://localhost:3000"));
    CHECK(allowed(p, "127.0.0.1:8080", "HTTPS://OPS.example.com"));
    for (const char* o : {"http://evil.example", "null", "https://ops.example.com.evil", "file://", "ws://127.0.0.1"}) {
      CAPTURE(o);
      CHECK(p.refusal("127.0.0.1:8080", o).find("allowed_origins") != std::string::npos);
    }
    const auto wide = policy("0.0.0.0", "asr.example.com");
    CHECK(allowed(wide, "asr.example.com", "https://asr.example.com"));
    CHECK_FALSE(allowed(wide, "asr.example.com", "http://localhost:8080"));
    CHECK(allowed(policy("0.0.0.0", "", "*"), "10.0.0.1", "http://anything.example"));
  }

  TEST_CASE("refusals quote header bytes that are not UTF-8 as U+FFFD") {
    const auto why = policy("127.0.0.1").refusal("\xFF.example", "");
    CHECK(why.find("\xEF\xBF\xBD.example") != std::string::npos);
  }

  TEST_CASE("query parameters: UTF-8 only, integers whole and in range") {
    auto q = query_params("/v1/transcribe?sample_rate=8000&encoding=mulaw&flag");
    REQUIRE(q.has_value());
    CHECK(q->at("sample_rate") == "8000");
    CHECK(q->at("encoding") == "mulaw");
    CHECK(q->count("flag") == 0);
    CHECK(query_params("/x").value().empty());
    CHECK_FALSE(query_params("/v1/transcribe?encoding=\xFF").has_value());
    CHECK(query_int("sample_rate", "8000", 1000, 768000).value() == 8000);
    for (const char* bad : {"8000abc", "1.5", "", "-8000", "99999999999999999999", "999", " 8000"}) {
      CAPTURE(bad);
      auto r = query_int("sample_rate", bad, 1000, 768000);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().message.find("sample_rate") != std::string::npos);
    }
  }
}
