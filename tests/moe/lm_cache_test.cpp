// The word LM's binary copy (arpa_lm::to_binary / from_binary / load_cached): the same model as
// the ARPA text it was parsed from, score for score, and never trusted when damaged or stale.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <span>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "moe/decoder/arpa_lm.hpp"
#include "tests/common/audio_tools.hpp"

using namespace sluice;
using namespace sluice::moe;

namespace {

const std::string tiny_path = SLUICE_TEST_DATA_DIR "/lm/tiny.arpa";
const std::string kn3_path = SLUICE_TEST_DATA_DIR "/lm/kn3.arpa";
const std::string default_lm_path = SLUICE_SOURCE_DIR "/models/default/lm.arpa";

arpa_lm parsed(const std::string& path) {
  auto lm = arpa_lm::load(path);
  REQUIRE_MESSAGE(lm.has_value(), lm.error().message);
  return std::move(*lm);
}

// Scores compared bit for bit: after every word from <s> and from the empty history, then after
// every `stride`-th word pair, each followed by every `stride`-th word and </s>.
void check_same_model(const arpa_lm& a, const arpa_lm& b, int32_t stride) {
  REQUIRE(b.order() == a.order());
  for (int32_t n = 1; n <= a.order(); ++n) CHECK(b.ngram_count(n) == a.ngram_count(n));
  REQUIRE(b.vocab_size() == a.vocab_size());
  CHECK(b.begin_state() == a.begin_state());
  int64_t mismatches = 0, compared = 0;
  const auto same = [&](const lm_step& x, const lm_step& y) {
    ++compared;
    if (std::bit_cast<uint32_t>(x.log_prob) != std::bit_cast<uint32_t>(y.log_prob) || x.next != y.next) ++mismatches;
  };
  for (int32_t w = 0; w < a.vocab_size(); ++w) {
    CHECK(b.word(w) == a.word(w));
    CHECK(b.word_id(a.word(w)) == w);
    CHECK(b.max_log_prob(w) == a.max_log_prob(w));
  }
  CHECK(b.max_log_prob(-1) == a.max_log_prob(-1));
  for (int32_t start : {a.begin_state(), a.null_state()})
    for (int32_t w1 = -1; w1 < a.vocab_size(); ++w1) {
      const auto s1 = a.score(start, w1);
      same(s1, b.score(start, w1));
      if ((w1 + 1) % stride != 0) continue;
      for (int32_t w2 = -1; w2 < a.vocab_size(); w2 += stride) {
        const auto s2 = a.score(s1.next, w2);
        same(s2, b.score(s1.next, w2));
        for (int32_t w3 = 0; w3 < a.vocab_size(); w3 += stride) same(a.score(s2.next, w3), b.score(s2.next, w3));
        CHECK(b.end_of_sentence(s2.next) == a.end_of_sentence(s2.next));
      }
    }
  MESSAGE(compared << " scores compared");
  CHECK(compared >= 2 * (int64_t{a.vocab_size()} + 1));  // at least every word after both starts
  CHECK(mismatches == 0);
}

void flip_byte(const std::string& path, std::size_t at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(c ^ 0x20));
}

}  // namespace

TEST_SUITE("decoder") {
  TEST_CASE("lm cache: the binary form reads back as the same model, score for score (tiny, kn3 and the default model's LM)") {
    for (const auto& [path, stride] : std::vector<std::pair<std::string, int32_t>>{
             {tiny_path, 1}, {kn3_path, 1}, {default_lm_path, 1500}}) {
      CAPTURE(path);
      const auto text = sluice::test::read_text(path);
      const auto a = parsed(path);
      const auto h = arpa_lm::text_hash(text);
      const auto bytes = a.to_binary(h);
      auto b = arpa_lm::from_binary(bytes, h, "copy");
      REQUIRE_MESSAGE(b.has_value(), b.error().message);
      CHECK_FALSE(a.uses_binary_in_place());
      CHECK(b->uses_binary_in_place());
      check_same_model(a, *b, stride);
      // A model read from a copy writes the same copy (its hash table as it lies).
      CHECK(b->to_binary(h) == bytes);
      // Bytes that are not 8-byte aligned are copied first, and read the same.
      std::vector<std::byte> shifted(bytes.size() + 1);
      std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
      auto c = arpa_lm::from_binary(nullptr, std::span<const std::byte>(shifted).subspan(1), h, "shifted");
      REQUIRE_MESSAGE(c.has_value(), c.error().message);
      CHECK(c->to_binary(h) == bytes);
      // Made from another text: refused.
      auto other = arpa_lm::from_binary(bytes, h ^ 1, "copy");
      REQUIRE_FALSE(other.has_value());
      CHECK(other.error().code == errc::corrupt);
    }
  }

  TEST_CASE("lm cache: a damaged or cut binary copy is refused, never read") {
    const auto text = sluice::test::read_text(kn3_path);
    const auto h = arpa_lm::text_hash(text);
    const auto bytes = parsed(kn3_path).to_binary(h);
    for (std::size_t at : {std::size_t{0}, std::size_t{9}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 9,
                           bytes.size() - 1}) {
      CAPTURE(at);
      auto damaged = bytes;
      damaged[at] = static_cast<char>(damaged[at] ^ 0x5a);
      CHECK_FALSE(arpa_lm::from_binary(damaged, h, "d").has_value());
    }
    for (std::size_t keep : {std::size_t{0}, std::size_t{7}, bytes.size() / 2, bytes.size() - 1}) {
      CAPTURE(keep);
      auto r = arpa_lm::from_binary(std::string_view(bytes).substr(0, keep), h, "cut");
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().code == errc::corrupt);
    }
  }

  TEST_CASE("lm cache: a copy whose n-gram hash table is wrong is refused even with a right checksum") {
    // The table is used where it lies, so its slots are checked, not trusted: each must hold an
    // n-gram of order > 1 with its own entry's answer, once, where a lookup of its key finds it.
    const auto text = sluice::test::read_text(kn3_path);
    const auto h = arpa_lm::text_hash(text);
    const auto bytes = parsed(kn3_path).to_binary(h);
    const std::size_t body = bytes.size() - sizeof(uint64_t);
    // The table ends the body: a slot count, then that many 24-byte slots {key, stamp, entry,
    // log_prob, next}. Found from the end; the stamp (u32) comes before the padding before it.
    constexpr std::size_t slot_bytes = 24;
    std::size_t count_at = 0, n = 0;
    for (std::size_t p = 8; p + 8 <= body; p += 8) {
      uint64_t v = 0;
      std::memcpy(&v, bytes.data() + p, 8);
      if (v > 0 && (body - p - 8) % slot_bytes == 0 && v == (body - p - 8) / slot_bytes) {
        count_at = p;
        n = static_cast<std::size_t>(v);
      }
    }
    REQUIRE(n >= 16);
    REQUIRE(std::has_single_bit(n));
    const std::size_t first = count_at + 8;
    uint32_t stamp = 0;
    std::memcpy(&stamp, bytes.data() + count_at - 8, sizeof stamp);  // u32, then 4 bytes of padding
    auto slot_stamp = [&](const std::string& b, std::size_t i) {
      uint32_t st = 0;
      std::memcpy(&st, b.data() + first + i * slot_bytes + 8, 4);
      return st;
    };
    std::vector<std::size_t> used, unused;
    for (std::size_t i = 0; i < n; ++i) (slot_stamp(bytes, i) == stamp ? used : unused).push_back(i);
    REQUIRE(used.size() >= 2);
    REQUIRE(!unused.empty());
    const auto resealed = [&](std::string b) {
      const uint64_t sum = std::hash<std::string_view>{}(std::string_view(b).substr(0, body));
      std::memcpy(b.data() + body, &sum, sizeof sum);
      return b;
    };
    REQUIRE(arpa_lm::from_binary(resealed(bytes), h, "same").has_value());  // resealing alone changes nothing
    // Each damage is refused for its own reason (checked by the message's words).
    const auto refused = [&](const std::string& b, const std::string& what, const std::string& why) {
      CAPTURE(what);
      auto r = arpa_lm::from_binary(resealed(b), h, "t");
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().code == errc::corrupt);
      CHECK_MESSAGE(r.error().message.find(why) != std::string::npos, r.error().message);
    };
    {  // two slots in use swapped: each is then away from where its lookup goes
      auto b = bytes;
      std::swap_ranges(b.begin() + static_cast<std::ptrdiff_t>(first + used[0] * slot_bytes),
                       b.begin() + static_cast<std::ptrdiff_t>(first + used[0] * slot_bytes + slot_bytes),
                       b.begin() + static_cast<std::ptrdiff_t>(first + used.back() * slot_bytes));
      refused(b, "swapped slots", "lookup does not find");
    }
    {  // a slot's entry id out of range
      auto b = bytes;
      const int32_t bad = 1 << 30;
      std::memcpy(b.data() + first + used[0] * slot_bytes + 12, &bad, 4);
      refused(b, "entry out of range", "a bad n-gram slot");
    }
    {  // a slot's answer not its entry's
      auto b = bytes;
      b[first + used[0] * slot_bytes + 16] ^= 0x01;
      refused(b, "wrong answer", "does not match its entry");
    }
    {  // an empty slot marked in use: one slot more than there are n-grams
      auto b = bytes;
      std::memcpy(b.data() + first + unused[0] * slot_bytes + 8, &stamp, 4);
      refused(b, "an extra slot", "does not hold every n-gram");
    }
    {  // a slot in use marked empty: an n-gram missing
      auto b = bytes;
      const uint32_t other = stamp + 1;
      std::memcpy(b.data() + first + used[0] * slot_bytes + 8, &other, 4);
      refused(b, "a missing slot", "does not hold every n-gram");
    }
  }

  TEST_CASE("lm cache: load_cached writes a copy, reads it next time, and parses again when the copy is damaged or the text changed") {
    test::temp_dir tmp;
    const std::string dir = tmp.file("cache");
    const std::string arpa = tmp.file("lm.arpa");
    std::filesystem::copy_file(kn3_path, arpa);
    const auto reference = parsed(kn3_path);

    arpa_lm::cache_info info;
    auto first = arpa_lm::load_cached(arpa, dir, {}, &info);
    REQUIRE_MESSAGE(first.has_value(), first.error().message);
    CHECK_FALSE(info.hit);
    REQUIRE(std::filesystem::exists(info.file));
    CHECK(info.file.rfind(dir, 0) == 0);
    const std::string copy = info.file;

    auto second = arpa_lm::load_cached(arpa, dir, {}, &info);
    REQUIRE(second.has_value());
    CHECK(info.hit);
    CHECK(second->uses_binary_in_place());  // the mapped copy's own tables, not rebuilt
    CHECK(info.file == copy);
    check_same_model(reference, *second, 1);

    // A damaged copy: parsed again (the same model), and the copy is rewritten.
    flip_byte(copy, std::filesystem::file_size(copy) / 2);
    auto third = arpa_lm::load_cached(arpa, dir, {}, &info);
    REQUIRE(third.has_value());
    CHECK_FALSE(info.hit);
    check_same_model(reference, *third, 1);
    REQUIRE(arpa_lm::load_cached(arpa, dir, {}, &info).has_value());
    CHECK(info.hit);

    // The text changed (one probability): another copy, and its scores are the new text's.
    auto text = sluice::test::read_text(kn3_path);
    const auto line = text.find("\n-", text.find("\\2-grams:"));
    REQUIRE(line != std::string::npos);
    text.insert(line + 2, "0");  // "-1.23" -> "-01.23": the same number, another text
    const auto digit = text.find_first_of("123456789", line + 3);
    REQUIRE(digit != std::string::npos);
    text[digit] = text[digit] == '9' ? '8' : static_cast<char>(text[digit] + 1);
    std::ofstream(arpa, std::ios::binary | std::ios::trunc) << text;
    auto changed = arpa_lm::load_cached(arpa, dir, {}, &info);
    REQUIRE_MESSAGE(changed.has_value(), changed.error().message);
    CHECK_FALSE(info.hit);
    CHECK(info.file != copy);
    auto direct = arpa_lm::parse(text, "changed");
    REQUIRE(direct.has_value());
    check_same_model(*direct, *changed, 1);
  }

  TEST_CASE("lm cache: no cache directory, an unwritable one, and a bad ARPA file behave as load()") {
    arpa_lm::cache_info info;
    auto plain = arpa_lm::load_cached(kn3_path, "", {}, &info);
    REQUIRE(plain.has_value());
    CHECK(info.file.empty());
    CHECK_FALSE(info.hit);

    test::temp_dir tmp;
    std::ofstream(tmp.file("a-file")) << "x";  // a file where the directory should be
    auto unwritable = arpa_lm::load_cached(kn3_path, tmp.file("a-file") + "/sub", {}, &info);
    REQUIRE(unwritable.has_value());
    CHECK_FALSE(info.hit);
    check_same_model(parsed(kn3_path), *unwritable, 1);

    std::ofstream(tmp.file("bad.arpa")) << "\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0\thello\n";
    auto cached = arpa_lm::load_cached(tmp.file("bad.arpa"), tmp.file("cache"));
    auto direct = arpa_lm::load(tmp.file("bad.arpa"));
    REQUIRE_FALSE(cached.has_value());
    REQUIRE_FALSE(direct.has_value());
    CHECK(cached.error().message == direct.error().message);
    auto missing = arpa_lm::load_cached(tmp.file("none.arpa"), tmp.file("cache"));
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().code == errc::io);
  }

  TEST_CASE("lm cache: writing a copy removes other copies not read for copy_max_age, and reading one keeps it young") {
    test::temp_dir tmp;
    const std::string dir = tmp.file("cache");
    std::filesystem::create_directories(dir);
    const auto now = std::filesystem::file_time_type::clock::now();
    const auto old_time = now - arpa_lm::copy_max_age - std::chrono::hours(24);
    const auto make = [&](const std::string& name, std::filesystem::file_time_type t) {
      std::ofstream(dir + "/" + name) << "x";
      std::filesystem::last_write_time(dir + "/" + name, t);
    };
    make("lm-00000000000000aa.bin", old_time);                      // unused for longer than the max age
    make("lm-00000000000000bb.bin", now - std::chrono::hours(24));  // used yesterday
    make("notes.txt", old_time);                                    // not a copy
    arpa_lm::cache_info info;
    REQUIRE(arpa_lm::load_cached(kn3_path, dir, {}, &info).has_value());
    CHECK_FALSE(info.hit);
    CHECK(std::filesystem::exists(info.file));
    CHECK_FALSE(std::filesystem::exists(dir + "/lm-00000000000000aa.bin"));
    CHECK(std::filesystem::exists(dir + "/lm-00000000000000bb.bin"));
    CHECK(std::filesystem::exists(dir + "/notes.txt"));

    // The copy read again is young again: a later write of another text's copy keeps it.
    std::filesystem::last_write_time(info.file, old_time);
    REQUIRE(arpa_lm::load_cached(kn3_path, dir, {}, &info).has_value());
    CHECK(info.hit);
    CHECK(std::filesystem::last_write_time(info.file) > now - std::chrono::hours(1));
    REQUIRE(arpa_lm::load_cached(tiny_path, dir).has_value());
    CHECK(std::filesystem::exists(info.file));
  }
}
