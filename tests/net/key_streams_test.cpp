// The registry of connections per API key (net/auth/key_streams.hpp) alone: which `cut`s a
// revocation calls (all of a removed key's; only those needing a scope the key lost), handles
// that leave when dropped, and the anonymous principal that is never registered.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "net/auth/key_streams.hpp"

using namespace sluice::net::auth;

namespace {
principal key(const std::string& id, const char* scopes) { return principal{"acme", id, *scope_set::parse(scopes)}; }
}  // namespace

TEST_SUITE("key streams") {
  TEST_CASE("a revocation cuts every connection of a removed key and, for lost scopes, only those that needed them") {
    auto reg = std::make_shared<key_streams>();
    std::vector<std::string> cut;
    auto s1 = reg->enrol(key("k1", "stream,read"), scope::stream, [&] { cut.push_back("k1 stream"); });
    auto e1 = reg->enrol(key("k1", "stream,read"), scope::read, [&] { cut.push_back("k1 events"); });
    auto s2 = reg->enrol(key("k2", "stream"), scope::stream, [&] { cut.push_back("k2 stream"); });
    CHECK(reg->open("k1") == 2);
    CHECK(reg->open("k2") == 1);
    CHECK(reg->open("k3") == 0);

    // k1 keeps read only: its stream goes, its subscription stays.
    CHECK(reg->cut({{"k1", *scope_set::parse("read")}}) == 1);
    CHECK(cut == std::vector<std::string>{"k1 stream"});
    // An admin key allows every scope: nothing to cut.
    CHECK(reg->cut({{"k1", *scope_set::parse("admin")}}) == 0);
    // Removed keys: all their connections, unknown ids ignored.
    cut.clear();
    CHECK(reg->cut({{"k2", std::nullopt}, {"nobody", std::nullopt}}) == 1);
    CHECK(cut == std::vector<std::string>{"k2 stream"});

    s1.reset();
    CHECK(reg->open("k1") == 1);
    e1.reset();
    CHECK(reg->open("k1") == 0);
    cut.clear();
    CHECK(reg->cut({{"k1", std::nullopt}}) == 0);
    CHECK(cut.empty());
  }

  TEST_CASE("the anonymous principal is not registered, and a handle outliving its registry is harmless") {
    auto reg = std::make_shared<key_streams>();
    int calls = 0;
    auto none = reg->enrol(principal::anonymous(), scope::stream, [&] { ++calls; });
    CHECK(none == nullptr);
    auto h = reg->enrol(key("k1", "stream"), scope::stream, [&] { ++calls; });
    REQUIRE(h != nullptr);
    reg.reset();
    h.reset();  // leaves a registry that is gone
    CHECK(calls == 0);
  }
}
