#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "config/sluice_config.hpp"

using namespace sluice;
using namespace sluice::config;

namespace {
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_SUITE("config") {
  TEST_CASE("defaults are valid") {
    sluice_config cfg;
    CHECK(validate(cfg).has_value());
  }

  TEST_CASE("the shipped config/sluice.toml loads, validates and documents every key") {
    sluice_config cfg;
    auto r = apply_toml_file(cfg, SLUICE_SOURCE_DIR "/config/sluice.toml");
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    CHECK(validate(cfg).has_value());
    std::ifstream in(SLUICE_SOURCE_DIR "/config/sluice.toml");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const auto& key : known_keys(cfg)) {
      auto k = key.substr(key.find('.') + 1);
      CHECK_MESSAGE(contains(text, "\n" + k + " ="), (key + " is not in config/sluice.toml"));
    }
  }

  TEST_CASE("TOML values are applied with their types") {
    sluice_config cfg;
    auto r = apply_toml(cfg, "[vad]\nthreshold_db = 12.5\nhangover_ms = 300\n[audio]\ndenoise = true\n"
                             "resample_quality = \"medium\"\n[model]\ndir = \"/m\"\n", "t.toml");
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    CHECK(cfg.vad.threshold_db == doctest::Approx(12.5));
    CHECK(cfg.vad.hangover_ms == 300);
    CHECK(cfg.audio.denoise);
    CHECK(cfg.audio.resample_quality == "medium");
    CHECK(cfg.model.dir == "/m");
  }

  TEST_CASE("an integer is accepted where a number is expected") {
    sluice_config cfg;
    REQUIRE(apply_toml(cfg, "[vad]\nthreshold_db = 7\n", "t").has_value());
    CHECK(cfg.vad.threshold_db == doctest::Approx(7.0));
  }

  TEST_CASE("out of range value names the key, the value and the allowed range") {
    sluice_config cfg;
    auto r = apply_toml(cfg, "[vad]\nthreshold_db = 100\n", "t.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == errc::invalid_config);
    CHECK(contains(r.error().message, "vad.threshold_db"));
    CHECK(contains(r.error().message, "100"));
    CHECK(contains(r.error().message, "allowed 1 .. 40"));
    CHECK(cfg.vad.threshold_db == doctest::Approx(sluice_config{}.vad.threshold_db));
  }

  TEST_CASE("auth.keys_reload_check_s: 2 s by default, 0 turns the check off, a negative period is refused") {
    sluice_config cfg;
    CHECK(cfg.auth.keys_reload_check_s == 2);
    REQUIRE(apply_toml(cfg, "[auth]\nkeys_reload_check_s = 0\n", "t.toml").has_value());
    CHECK(cfg.auth.keys_reload_check_s == 0);
    auto r = apply_override(cfg, "auth.keys_reload_check_s=-1");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == errc::invalid_config);
    CHECK(contains(r.error().message, "auth.keys_reload_check_s"));
    CHECK(contains(r.error().message, "allowed 0 .. 86400"));
  }

  TEST_CASE("wrong type is reported with the expected type") {
    sluice_config cfg;
    auto r = apply_toml(cfg, "[endpoint]\ntrailing_silence_ms = \"long\"\n", "t.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(contains(r.error().message, "endpoint.trailing_silence_ms"));
    CHECK(contains(r.error().message, "expected an integer"));
  }

  TEST_CASE("a fractional value for an integer key is a type error, not a silent truncation") {
    sluice_config cfg;
    auto r = apply_toml(cfg, "[vad]\nhangover_ms = 2.5\n", "t.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(contains(r.error().message, "vad.hangover_ms"));
  }

  TEST_CASE("string choices list what is allowed") {
    sluice_config cfg;
    auto r = apply_toml(cfg, "[log]\nlevel = \"loud\"\n", "t.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(contains(r.error().message, "log.level = \"loud\""));
    CHECK(contains(r.error().message, "\"debug\""));
  }

  TEST_CASE("unknown keys and sections are errors that list the known ones") {
    sluice_config cfg;
    auto r = apply_toml(cfg, "[vad]\nthreshold = 3\n", "t.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(contains(r.error().message, "unknown key vad.threshold"));
    CHECK(contains(r.error().message, "vad.threshold_db"));
    auto s = apply_toml(cfg, "[vda]\nx = 1\n", "t.toml");
    REQUIRE_FALSE(s.has_value());
    CHECK(contains(s.error().message, "unknown section [vda]"));
  }

  TEST_CASE("TOML syntax errors carry file, line and column") {
    sluice_config cfg;
    auto r = apply_toml(cfg, "[vad]\nthreshold_db = = 3\n", "bad.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(contains(r.error().message, "bad.toml:2:"));
  }

  TEST_CASE("missing config file is an io error naming the path") {
    sluice_config cfg;
    auto r = apply_toml_file(cfg, "/nonexistent/sluice.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == errc::io);
    CHECK(contains(r.error().message, "/nonexistent/sluice.toml"));
  }

  TEST_CASE("command-line overrides") {
    sluice_config cfg;
    REQUIRE(apply_override(cfg, "vad.threshold_db=6").has_value());
    CHECK(cfg.vad.threshold_db == doctest::Approx(6.0));
    REQUIRE(apply_override(cfg, "audio.denoise=on").has_value());
    CHECK(cfg.audio.denoise);
    REQUIRE(apply_override(cfg, "model.dir=models/x").has_value());
    CHECK(cfg.model.dir == "models/x");

    auto bad_num = apply_override(cfg, "vad.hangover_ms=abc");
    REQUIRE_FALSE(bad_num.has_value());
    CHECK(contains(bad_num.error().message, "is not an integer"));
    auto out = apply_override(cfg, "endpoint.max_utterance_ms=5");
    REQUIRE_FALSE(out.has_value());
    CHECK(contains(out.error().message, "allowed 1000 .. 120000"));
    auto shape = apply_override(cfg, "threshold_db");
    REQUIRE_FALSE(shape.has_value());
    CHECK(contains(shape.error().message, "section.key=value"));
    auto unknown = apply_override(cfg, "vad.nope=1");
    REQUIRE_FALSE(unknown.has_value());
    CHECK(contains(unknown.error().message, "unknown key vad.nope"));
  }

  TEST_CASE("cross-field rules are checked by validate") {
    sluice_config cfg;
    REQUIRE(apply_override(cfg, "segment.min_s=20").has_value());
    auto r = validate(cfg);
    REQUIRE_FALSE(r.has_value());
    CHECK(contains(r.error().message, "[segment]"));
    CHECK(contains(r.error().message, "min_s must be smaller than max_s"));
  }

  TEST_CASE("rtcp_interval_ms (0 or at least 100) and max_stream_kbps (0 or at least 16) of [sip] and [rtsp]") {
    struct bounded {
      const char* key;
      std::vector<const char*> ok;
      const char* too_small;
      const char* says;
    };
    const bounded keys[] = {
        {"rtcp_interval_ms", {"0", "100", "5000"}, "50", "rtcp_interval_ms must be 0 (no RTCP) or at least 100 ms"},
        {"max_stream_kbps", {"0", "16", "640"}, "8", "max_stream_kbps must be 0 (no limit) or at least 16 kbit/s"},
    };
    for (const std::string section : {"sip", "rtsp"})
      for (const auto& k : keys) {
        const auto key = section + "." + k.key + "=";
        for (const char* ok : k.ok) {
          sluice_config cfg;
          REQUIRE(apply_override(cfg, key + ok).has_value());
          CHECK_MESSAGE(validate(cfg).has_value(), std::string(key + ok));
        }
        sluice_config cfg;
        REQUIRE(apply_override(cfg, key + k.too_small).has_value());
        auto r = validate(cfg);
        REQUIRE_FALSE(r.has_value());
        CHECK(contains(r.error().message, section + "." + k.says));
        CHECK_FALSE(apply_override(cfg, key + "-1").has_value());
      }
  }

  TEST_CASE("printing round-trips through the loader") {
    sluice_config a;
    REQUIRE(apply_override(a, "vad.threshold_db=11.25").has_value());
    REQUIRE(apply_override(a, "log.level=debug").has_value());
    auto text = to_toml(a);
    sluice_config b;
    auto r = apply_toml(b, text, "printed");
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    CHECK(b.vad.threshold_db == doctest::Approx(11.25));
    CHECK(b.log.level == "debug");
    CHECK(to_toml(b) == text);
  }

  // Found by tests/fuzz/config_toml_fuzz (its seed corpus/config_toml/literal.toml): to_toml
  // printed strings between quotes without escaping, so a backslash or a quote in a value gave a
  // document that apply_toml reads differently or refuses.
  TEST_CASE("printing round-trips strings with backslashes, quotes and control characters") {
    const std::string crashing_input = "[model]\ndir = 'C:\\\\models'\n";  // the fuzzer's bytes
    sluice_config a;
    auto r = apply_toml(a, crashing_input, "fuzz.toml");
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    REQUIRE(a.model.dir == "C:\\\\models");
    sluice_config b;
    auto again = apply_toml(b, to_toml(a), "printed");
    REQUIRE_MESSAGE(again.has_value(), again.error().message);
    CHECK(b.model.dir == a.model.dir);

    const std::string nasty = "a\"b\\c\nd\te\x01 \xc3\xa9";  // quote, backslash, controls, é
    sluice_config c;
    c.model.dir = nasty;
    sluice_config d;
    auto printed = apply_toml(d, to_toml(c), "printed");
    REQUIRE_MESSAGE(printed.has_value(), printed.error().message);
    CHECK(d.model.dir == nasty);
  }

  // Found by tests/fuzz/config_toml_fuzz: an override value that is not UTF-8 was accepted, and
  // to_toml then printed a document that no TOML reader accepts.
  TEST_CASE("an override value that is not valid UTF-8 is refused without echoing it") {
    const std::string bad_bytes = "model.dir=\x88\xc7y";  // the fuzzer's line
    sluice_config cfg;
    auto r = apply_override(cfg, bad_bytes);
    REQUIRE_FALSE(r.has_value());
    CHECK(contains(r.error().message, "model.dir"));
    CHECK(contains(r.error().message, "not valid UTF-8"));
    CHECK_FALSE(contains(r.error().message, "\x88"));
    CHECK(cfg.model.dir == sluice_config{}.model.dir);
    for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"}) {
      CAPTURE(std::string(bad));
      CHECK_FALSE(apply_override(cfg, std::string("model.dir=") + bad).has_value());
    }
    REQUIRE(apply_override(cfg, "model.dir=caf\xc3\xa9/\xf0\x9f\x8e\xa7").has_value());
    sluice_config again;
    auto reread = apply_toml(again, to_toml(cfg), "printed");
    REQUIRE_MESSAGE(reread.has_value(), reread.error().message);
    CHECK(again.model.dir == "caf\xc3\xa9/\xf0\x9f\x8e\xa7");
  }

  TEST_CASE("printing keeps every digit of a number") {
    sluice_config a;
    REQUIRE(apply_override(a, "vad.threshold_db=6.123456789").has_value());
    sluice_config b;
    auto r = apply_toml(b, to_toml(a), "printed");
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    CHECK(b.vad.threshold_db == a.vad.threshold_db);  // exact: the text must round-trip
  }

  // Found by tests/fuzz/config_toml_fuzz: toml++ 3.3.0 reaches __builtin_unreachable on some
  // non-ASCII characters (here U+02BE where a value should start). The loader must still turn
  // the file into a syntax error naming the place, as Debian's libtomlplusplus does.
  TEST_CASE("a non-ASCII character where a value should start is a syntax error") {
    const std::string fuzzer_input = "[log]\npreemphasislevel = \"debug\"\n[vad]\nthrdob = \xca\xbe" "5\n";
    sluice_config cfg;
    auto r = apply_toml(cfg, fuzzer_input, "fuzz.toml");
    REQUIRE_FALSE(r.has_value());
    CHECK(contains(r.error().message, "fuzz.toml:4:"));
    CHECK(contains(r.error().message, "TOML syntax error"));
  }

  // Found by tests/fuzz/config_toml_fuzz: `x = -0.0` printed as "-0", read back as the integer 0
  // and printed as "0", so `sluice config` output did not reproduce itself.
  TEST_CASE("negative zero prints as 0 and the printed config reproduces itself") {
    sluice_config a;
    auto r = apply_toml(a, "[vad]\nvoiced_flatness_db = -0.0\n", "fuzz.toml");
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    const auto printed = to_toml(a);
    CHECK(contains(printed, "\nvoiced_flatness_db = 0\n"));
    sluice_config b;
    REQUIRE(apply_toml(b, printed, "printed").has_value());
    CHECK(to_toml(b) == printed);
  }
}
