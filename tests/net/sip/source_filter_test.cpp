// sip.allowed_sources (net/source_filter.hpp): addresses and CIDR networks, v4 and v6.
#include <doctest/doctest.h>

#include <boost/asio/ip/address.hpp>

#include "net/source_filter.hpp"

using sluice::net::source_filter;

namespace {
boost::asio::ip::address ip(const char* s) { return boost::asio::ip::make_address(s); }
}  // namespace

TEST_SUITE("sip allowed sources") {
  TEST_CASE("networks and single addresses, v4 and v6, and a mapped v4 address is judged as v4") {
    auto f = source_filter::parse(" 10.1.0.0/16, 192.0.2.7 ,2001:db8::/32,::1");
    REQUIRE(f.has_value());
    CHECK(f->allows(ip("10.1.255.254")));
    CHECK(f->allows(ip("10.1.0.0")));
    CHECK_FALSE(f->allows(ip("10.2.0.1")));
    CHECK(f->allows(ip("192.0.2.7")));
    CHECK_FALSE(f->allows(ip("192.0.2.8")));
    CHECK(f->allows(ip("2001:db8:ffff::1")));
    CHECK_FALSE(f->allows(ip("2001:db9::1")));
    CHECK(f->allows(ip("::1")));
    CHECK_FALSE(f->allows(ip("127.0.0.1")));
    CHECK(f->allows(ip("::ffff:10.1.2.3")));
    CHECK_FALSE(f->allows(ip("::ffff:10.9.2.3")));
  }

  TEST_CASE("a host address with a prefix names its network (10.1.2.3/8 is 10.0.0.0/8), and /0 is everyone") {
    auto f = source_filter::parse("10.1.2.3/8");
    REQUIRE(f.has_value());
    CHECK(f->allows(ip("10.200.0.1")));
    CHECK_FALSE(f->allows(ip("11.0.0.1")));
    auto all = source_filter::parse("0.0.0.0/0");
    REQUIRE(all.has_value());
    CHECK(all->allows(ip("203.0.113.9")));
  }

  TEST_CASE("empty allows everyone, and bad entries are errors naming them") {
    auto e = source_filter::parse(" , ");
    REQUIRE(e.has_value());
    CHECK(e->empty());
    CHECK(e->allows(ip("203.0.113.9")));
    for (const char* bad : {"10.0.0.0/33", "pbx.example.com", "10.0.0", "fd00::/129", "10.0.0.0/-1"}) {
      auto r = source_filter::parse(std::string("127.0.0.1, ") + bad);
      REQUIRE_MESSAGE(!r.has_value(), bad);
      CHECK(r.error().message.find(bad) != std::string::npos);
    }
  }
}

TEST_SUITE("sip tenant sources") {
  using sluice::net::tenant_sources;

  TEST_CASE("the first tenant whose list holds the address owns the call - others take the fallback") {
    auto t = tenant_sources::parse(" acme : 10.1.0.0/16, 192.0.2.7 ; globex:10.0.0.0/8 ;; ops: fd00::/8 ;");
    REQUIRE(t.has_value());
    const std::string none;
    CHECK(t->tenant_of(ip("10.1.2.3"), none) == "acme");  // in acme's and globex's: the first wins
    CHECK(t->tenant_of(ip("10.2.0.1"), none) == "globex");
    CHECK(t->tenant_of(ip("192.0.2.7"), none) == "acme");
    CHECK(t->tenant_of(ip("fd00::5"), none) == "ops");
    CHECK(t->tenant_of(ip("::ffff:10.9.0.1"), none) == "globex");
    CHECK(t->tenant_of(ip("203.0.113.9"), "initech") == "initech");
    CHECK(t->tenant_of(ip("203.0.113.9"), none).empty());
    auto empty = tenant_sources::parse("  ");
    REQUIRE(empty.has_value());
    CHECK(empty->empty());
    CHECK(empty->tenant_of(ip("10.1.2.3"), "initech") == "initech");
  }

  TEST_CASE("a part without a tenant, a bad tenant name, a tenant named twice, no addresses or a bad address are errors naming it") {
    struct bad_case {
      const char* text;
      const char* names;
    };
    for (const auto& c : std::vector<bad_case>{{"10.0.0.0/8", "\"10.0.0.0/8\" is not \"tenant: addresses\""},
                                               {"fd00::/8", "\"fd00::/8\" is not"},
                                               {": 10.0.0.0/8", "\": 10.0.0.0/8\" is not"},
                                               {"ac/me: 10.0.0.0/8", "\"ac/me: 10.0.0.0/8\" is not"},
                                               {"acme: 10.0.0.0/8; acme: 192.0.2.1", "tenant \"acme\" is named twice"},
                                               {"acme: , ", "tenant \"acme\" has no addresses"},
                                               {"acme: 10.0.0.0/33", "tenant \"acme\": \"10.0.0.0/33\""}}) {
      auto r = tenant_sources::parse(c.text);
      REQUIRE_MESSAGE(!r.has_value(), c.text);
      CHECK_MESSAGE(r.error().message.find(c.names) != std::string::npos, r.error().message);
    }
  }
}
