// [engine] overflow is one enum (config/overflow_policy.hpp) with one spelling: every name its
// documentation gives parses, from TOML and from an override, to the value of that name, and
// prints back as the same name; the names of the old, differently named policies are refused.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include "config/sluice_config.hpp"

using namespace sluice;
using namespace sluice::config;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The values [engine] overflow allows and its documentation line, from the section's field list.
struct overflow_field {
  std::vector<overflow_policy> allowed;
  std::string doc;
};

overflow_field overflow_field_of(engine_config e) {
  overflow_field out;
  e.visit([&](std::string_view key, const auto&, const auto& constraint, std::string_view doc) {
    if constexpr (std::is_same_v<std::decay_t<decltype(constraint)>, enum_of<overflow_policy>>) {
      if (key != "overflow") return;
      out.allowed.assign(constraint.allowed.begin(), constraint.allowed.end());
      out.doc = std::string(doc);
    }
  });
  return out;
}

}  // namespace

TEST_SUITE("config overflow policy") {
  TEST_CASE("every documented overflow name parses to its value and prints back the same") {
    const auto field = overflow_field_of({});
    REQUIRE(field.allowed.size() == 2);
    std::ifstream in(SLUICE_SOURCE_DIR "/config/sluice.toml");
    const std::string shipped((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const auto value : field.allowed) {
      const std::string name(enum_name(value));
      CAPTURE(name);
      CHECK(contains(field.doc, name));                   // the key's documentation names it
      CHECK(contains(shipped, "# " + field.doc + "\n"));  // and config/sluice.toml carries that text
      sluice_config from_toml;
      auto t = apply_toml(from_toml, "[engine]\noverflow = \"" + name + "\"\n", "t.toml");
      REQUIRE_MESSAGE(t.has_value(), t.error().message);
      CHECK(from_toml.engine.overflow == value);
      sluice_config from_override;
      auto o = apply_override(from_override, "engine.overflow=" + name);
      REQUIRE_MESSAGE(o.has_value(), o.error().message);
      CHECK(from_override.engine.overflow == value);
      CHECK(contains(to_toml(from_override), "\noverflow = \"" + name + "\"\n"));
      CHECK(validate(from_override).has_value());
    }
    // The two names are distinct values.
    CHECK(enum_parse<overflow_policy>("keep") != enum_parse<overflow_policy>("reroute"));
  }

  TEST_CASE("names outside [engine] overflow are refused with the allowed names listed") {
    // replicas / replicas_exact: the old internal names; spill / reroute_spill: dispatch rules
    // a spillway holding only replicas cannot serve; KEEP: names are exact.
    for (const char* name : {"replicas", "replicas_exact", "spill", "reroute_spill", "KEEP", ""}) {
      CAPTURE(name);
      sluice_config cfg;
      auto t = apply_toml(cfg, std::string("[engine]\noverflow = \"") + name + "\"\n", "t.toml");
      REQUIRE_FALSE(t.has_value());
      CHECK(contains(t.error().message, "engine.overflow"));
      CHECK(contains(t.error().message, "choose one of \"keep\", \"reroute\""));
      auto o = apply_override(cfg, std::string("engine.overflow=") + name);
      REQUIRE_FALSE(o.has_value());
      CHECK(contains(o.error().message, "choose one of \"keep\", \"reroute\""));
      CHECK(cfg.engine.overflow == overflow_policy::keep);  // unchanged
    }
    sluice_config cfg;
    auto wrong_type = apply_toml(cfg, "[engine]\noverflow = 3\n", "t.toml");
    REQUIRE_FALSE(wrong_type.has_value());
    CHECK(contains(wrong_type.error().message, "expected a string"));
  }

  TEST_CASE("a value outside the allowed set fails validation with its name") {
    sluice_config cfg;
    cfg.engine.overflow = overflow_policy::spill;
    auto v = validate(cfg);
    REQUIRE_FALSE(v.has_value());
    CHECK(contains(v.error().message, "engine.overflow = \"spill\""));
  }
}
