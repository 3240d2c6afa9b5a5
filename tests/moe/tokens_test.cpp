#include <doctest/doctest.h>

#include "moe/tokens.hpp"

using namespace sluice;
using namespace sluice::moe;

TEST_SUITE("tokens") {
  TEST_CASE("the recipe's tokens.txt loads with blank 0 and a space token") {
    auto t = token_table::load(SLUICE_SOURCE_DIR "/tools/train/tokens.txt");
    REQUIRE_MESSAGE(t.has_value(), t.error().message);
    CHECK(t->size() == 29);
    CHECK(t->blank_id() == 0);
    CHECK(t->text(t->space_id()) == " ");
    auto ids = t->encode("it's ok");
    REQUIRE(ids.has_value());
    CHECK(ids->size() == 7);
    CHECK((*ids)[4] == t->space_id());
    CHECK(t->text((*ids)[2]) == "'");
  }
  TEST_CASE("bad token files and unknown characters are precise errors") {
    CHECK(token_table::parse("a\n<blank>\n", "t").error().message.find("token 0 must be <blank>") != std::string::npos);
    CHECK(token_table::parse("<blank>\na\na\n", "t").error().message.find("t:3: duplicate token 'a'") != std::string::npos);
    CHECK(token_table::parse("", "t").error().message.find("no tokens") != std::string::npos);
    auto t = token_table::parse("<blank>\na\n", "t");
    REQUIRE(t.has_value());
    CHECK(t->space_id() == -1);
    CHECK(t->encode("ab").error().message.find("'b'") != std::string::npos);
  }
}
