// The checked JSON accessors: wrong types, ranges, fractions, lengths and invalid UTF-8 are
// errors that name the field; to_wire never throws and always yields valid JSON and UTF-8.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "net/json_fields.hpp"

using namespace sluice;
using namespace sluice::net;

namespace {

json obj(const char* text) { return json::parse(text); }

// A strict UTF-8 check written independently of net/ (RFC 3629 table 1, by code point).
bool strict_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (int k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

}  // namespace

TEST_SUITE("json fields") {
  TEST_CASE("get_int: absent gives the default, integers in range pass, integral floats pass") {
    CHECK(get_int(obj("{}"), "n", 7, 0, 10).value() == 7);
    CHECK(get_int(obj(R"({"n":10})"), "n", 7, 0, 10).value() == 10);
    CHECK(get_int(obj(R"({"n":-3})"), "n", 7, -5, 10).value() == -3);
    CHECK(get_int(obj(R"({"n":8000.0})"), "n", 0, 0, 9000).value() == 8000);
    // At the int64 limit a double rounds up to 2^63, which no int64 holds.
    CHECK_FALSE(get_int(obj(R"({"n":9.3e18})"), "n", 0, 0, INT64_MAX).has_value());
    CHECK_FALSE(get_int(obj(R"({"n":9223372036854775808.0})"), "n", 0, 0, INT64_MAX).has_value());
  }

  TEST_CASE("get_int refuses fractions, out-of-range values, values past 64 bits and other types, naming the field") {
    for (const char* text : {R"({"rate":8000.5})", R"({"rate":4294975296})", R"({"rate":-1})", R"({"rate":1e300})",
                             R"({"rate":18446744073709551615})", R"({"rate":"8000"})", R"({"rate":true})",
                             R"({"rate":null})", R"({"rate":[8000]})", R"({"rate":{}})"}) {
      CAPTURE(text);
      auto r = get_int(obj(text), "rate", 16000, 1000, 48000);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().code == errc::invalid_argument);
      CHECK(r.error().message.find("\"rate\"") != std::string::npos);
      CHECK(r.error().message.find("[1000, 48000]") != std::string::npos);
    }
  }

  TEST_CASE("get_number, get_bool, get_string: type, range and length checks") {
    CHECK(get_number(obj(R"({"w":2.5})"), "w", 3, 0, 100).value() == 2.5);
    CHECK(get_number(obj("{}"), "w", 3, 0, 100).value() == 3);
    CHECK_FALSE(get_number(obj(R"({"w":101})"), "w", 3, 0, 100).has_value());
    CHECK_FALSE(get_number(obj(R"({"w":"2"})"), "w", 3, 0, 100).has_value());
    CHECK(get_bool(obj(R"({"b":false})"), "b", true).value() == false);
    CHECK(get_bool(obj("{}"), "b", true).value() == true);
    for (const char* text : {R"({"b":0})", R"({"b":"true"})", R"({"b":null})"}) {
      auto r = get_bool(obj(text), "b", true);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().message.find("\"b\"") != std::string::npos);
    }
    CHECK(get_string(obj(R"({"s":"abc"})"), "s", "", 3).value() == "abc");
    auto long_s = get_string(obj(R"({"s":"abcd"})"), "s", "", 3);
    REQUIRE_FALSE(long_s.has_value());
    CHECK(long_s.error().message.find("at most 3") != std::string::npos);
    CHECK_FALSE(get_string(obj(R"({"s":5})"), "s", "", 3).has_value());
    CHECK(get_string(obj("{}"), "s", "dflt", 3).value() == "dflt");
  }

  TEST_CASE("parse_object: not JSON, invalid UTF-8 and non-objects are errors, never exceptions") {
    CHECK(parse_object(R"({"a":1})").has_value());
    CHECK(parse_object("{not json").error().code == errc::corrupt);
    CHECK(parse_object("{\"a\":\"\xFF\"}").error().code == errc::corrupt);
    CHECK(parse_object("[1,2]").error().code == errc::invalid_argument);
    CHECK(parse_object("").error().code == errc::corrupt);
    CHECK(parse_object(std::string(100000, '[')).error().code == errc::corrupt);
  }

  TEST_CASE("to_wire: strings that are not UTF-8 (where dump() throws) go out as U+FFFD in valid JSON") {
    const json j = {{"error", std::string("not found: /\xFF\xC3\"x")}};
    CHECK_THROWS(j.dump());  // the library's default, which used to escape to the network thread
    const auto wire = to_wire(j);
    CHECK(strict_utf8(wire));
    const auto back = json::parse(wire, nullptr, false);
    REQUIRE_FALSE(back.is_discarded());
    CHECK(back["error"] == "not found: /\xEF\xBF\xBD\xEF\xBF\xBD\"x");
  }

  TEST_CASE("valid_utf8 keeps valid text and replaces each invalid byte, close reasons fit 123 bytes") {
    CHECK(valid_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80") == "caf\xC3\xA9 \xF0\x9F\x98\x80");
    for (const char* bad : {"\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82", "\x80", "\xFE"}) {
      CAPTURE(bad);
      const auto out = valid_utf8(bad);
      CHECK(strict_utf8(out));
      CHECK(out.find("\xEF\xBF\xBD") != std::string::npos);
    }
    std::string many_e;
    for (int i = 0; i < 100; ++i) many_e += "\xC3\xA9";  // 200 bytes of 2-byte characters
    const auto reason = close_reason_text(many_e);
    CHECK(reason.size() <= 123);
    CHECK(reason.size() >= 121);
    CHECK(strict_utf8(reason));
  }
}
