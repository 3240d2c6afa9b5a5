// Tenant files in a directory: loading, reloading on change, keeping the old version when a
// changed file is broken, removal, and the API's hotword replacement. Files are written by the
// test into a fresh temporary directory; a change is made visible to reload() by a different
// size or an explicit last_write_time, never by waiting.

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>

#include "moe/postproc/tenant_store.hpp"
#include "tests/common/audio_tools.hpp"

using namespace sluice::moe::postproc;
namespace fs = std::filesystem;

namespace {

// A temp directory (tests/common/audio_tools.hpp) that writes tenant files.
struct tenant_dir : sluice::test::temp_dir {
  // Writes a file and moves its time forward by `tick` seconds so reload() sees a change even
  // when the size is the same and the clock's resolution is coarse.
  void write(const std::string& name, const std::string& text, int tick = 0) const {
    sluice::test::write_text(file(name), text);
    if (tick) fs::last_write_time(path() / name, fs::last_write_time(path() / name) + std::chrono::seconds(tick));
  }
};

}  // namespace

TEST_CASE("tenant file: every field is read, unknown keys and wrong types are refused by name") {
  auto p = parse_tenant(R"(hotwords = ["sluice pro", "acme premium 5"]
lexicon = ["acmecorp"]
[redaction]
enabled = true
emails = false
words = ["project falcon"]
)",
                        "billing", "billing.toml");
  REQUIRE_MESSAGE(p.has_value(), (p ? "" : p.error().message));
  CHECK(p->id == "billing");
  CHECK(p->hotwords == std::vector<std::string>{"sluice pro", "acme premium 5"});
  CHECK(p->lexicon == std::vector<std::string>{"acmecorp"});
  CHECK(p->has_redaction);
  CHECK(p->redaction.enabled);
  CHECK_FALSE(p->redaction.emails);
  CHECK(p->redaction.cards);
  CHECK(p->redaction.words == std::vector<std::string>{"project falcon"});

  auto bad = parse_tenant("hotword = [\"x\"]\n", "t", "t.toml");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message.find("unknown key \"hotword\"") != std::string::npos);
  bad = parse_tenant("hotwords = \"x\"\n", "t", "t.toml");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message.find("array of strings") != std::string::npos);
  bad = parse_tenant("[redaction]\ncards = \"yes\"\n", "t", "t.toml");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message.find("redaction.cards") != std::string::npos);
  bad = parse_tenant("hotwords = [\n", "t", "t.toml");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message.find("t.toml") != std::string::npos);
}

TEST_CASE("tenant store: reload picks up new, changed and removed files, a broken change keeps the old version") {
  tenant_dir d;
  d.write("billing.toml", "hotwords = [\"alpha\"]\n");
  d.write("support.toml", "hotwords = [\"beta\"]\n");
  d.write("notes.txt", "not a tenant\n");
  tenant_store store(d.path().string());
  auto rep = store.reload();
  CHECK(rep.errors.empty());
  CHECK(rep.loaded.size() == 2);
  REQUIRE(store.get("billing"));
  CHECK(store.get("billing")->hotwords == std::vector<std::string>{"alpha"});
  const auto v1 = store.get("billing")->version;
  const auto held = store.get("billing");

  SUBCASE("unchanged files are not reread") {
    rep = store.reload();
    CHECK(rep.loaded.empty());
    CHECK(store.get("billing")->version == v1);
  }
  SUBCASE("a changed file gives a new version; a profile held before keeps its contents") {
    d.write("billing.toml", "hotwords = [\"alpha\", \"gamma\"]\n", 1);
    rep = store.reload();
    CHECK(rep.loaded == std::vector<std::string>{"billing"});
    CHECK(store.get("billing")->hotwords == std::vector<std::string>{"alpha", "gamma"});
    CHECK(store.get("billing")->version > v1);
    CHECK(held->hotwords == std::vector<std::string>{"alpha"});
  }
  SUBCASE("a broken change is reported and the old version stays in use") {
    d.write("billing.toml", "hotwords = [\"alpha\"\n", 1);
    rep = store.reload();
    REQUIRE(rep.errors.size() == 1);
    CHECK(rep.errors[0].message.find("billing.toml") != std::string::npos);
    CHECK(store.get("billing")->hotwords == std::vector<std::string>{"alpha"});
    CHECK(store.get("billing")->version == v1);
    // Fixed again: used.
    d.write("billing.toml", "hotwords = [\"delta\"]\n", 2);
    rep = store.reload();
    CHECK(rep.errors.empty());
    CHECK(store.get("billing")->hotwords == std::vector<std::string>{"delta"});
  }
  SUBCASE("a removed file removes its tenant") {
    fs::remove(d.path() / "support.toml");
    rep = store.reload();
    CHECK(rep.removed == std::vector<std::string>{"support"});
    CHECK(store.get("support") == nullptr);
    CHECK(store.get("billing") != nullptr);
  }
}

TEST_CASE("tenant store: the API replaces hotwords and keeps the file's other rules") {
  tenant_dir d;
  d.write("billing.toml", "hotwords = [\"alpha\"]\n[redaction]\nwords = [\"falcon\"]\n");
  tenant_store store(d.path().string());
  store.reload();
  const auto v1 = store.get("billing")->version;
  auto v2 = store.set_hotwords("billing", {"omega 4"});
  REQUIRE(v2.has_value());
  CHECK(*v2 > v1);
  CHECK(store.get("billing")->hotwords == std::vector<std::string>{"omega 4"});
  CHECK(store.get("billing")->redaction.words == std::vector<std::string>{"falcon"});
  // A tenant with no file is created by the API.
  REQUIRE(store.set_hotwords("newco", {"x"}).has_value());
  CHECK(store.get("newco")->hotwords == std::vector<std::string>{"x"});
  CHECK_FALSE(store.set_hotwords("../etc", {"x"}).has_value());
  CHECK_FALSE(valid_tenant_id(""));
  CHECK_FALSE(valid_tenant_id(".hidden"));
  CHECK(valid_tenant_id("team-a_1.eu"));
}
