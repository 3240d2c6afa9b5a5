// Ogg files with very many logical streams (a hostile upload once made the page check quadratic),
// and the piecewise Ogg Opus reader that lets a caller bound what it holds.

#include <doctest/doctest.h>

#include "tests/dsp/decoder_test_helpers.hpp"

using namespace sluice::test::decoders;

namespace {

// One Ogg page (RFC 3533 §6) holding one packet of `body` bytes (< 255), its CRC left zero.
void append_page(bytes_t& out, uint8_t header_type, uint32_t serial, uint32_t sequence, const bytes_t& body) {
  const bytes_t head = {'O', 'g', 'g', 'S', 0, header_type};
  out.insert(out.end(), head.begin(), head.end());
  out.insert(out.end(), 8, 0);  // granule position
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(serial >> (8 * i)));
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(sequence >> (8 * i)));
  out.insert(out.end(), 4, 0);  // CRC, filled in by fix_ogg_crcs
  out.push_back(1);             // one segment
  out.push_back(static_cast<uint8_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
}

// An OpusHead packet (RFC 7845 §5.1): mono, 312 samples pre-skip, 16 kHz input, family 0.
const bytes_t opus_head = {'O', 'p', 'u', 's', 'H', 'e', 'a', 'd', 1, 1, 0x38, 0x01, 0x80, 0x3E, 0, 0, 0, 0, 0};
constexpr uint8_t bos = 0x02, eos = 0x04;
constexpr std::size_t page_bytes = 27 + 1 + 19;  // header, one lacing value, the OpusHead packet

// `streams` logical streams multiplexed: every BOS page first (as RFC 3533 requires), then an
// EOS page for each.
bytes_t many_streams(uint32_t streams) {
  bytes_t b;
  for (uint32_t s = 0; s < streams; ++s) append_page(b, bos, s, 0, opus_head);
  for (uint32_t s = 0; s < streams; ++s) append_page(b, eos, s, 1, opus_head);
  fix_ogg_crcs(b);
  return b;
}

}  // namespace

TEST_SUITE_BEGIN("decoders");

TEST_CASE("ogg: 20,000 tiny logical streams are refused at the stream limit, the walk stopping there") {
  const bytes_t file = many_streams(20000);
  REQUIRE(file.size() == 2 * 20000 * page_bytes);
  auto r = probe_ogg_opus(file);
  REQUIRE_FALSE(r);
  CAPTURE(r.error().message);
  CHECK(r.error().code == errc::unsupported);
  CHECK(has(r.error().message, "at most " + std::to_string(ogg_max_logical_streams) + " logical streams"));
  // The page that starts the first stream past the limit: every page before it was one of the
  // allowed streams' BOS pages, so the check read no further than that (work bounded by the
  // limit, not by the file).
  CHECK(has(r.error().message, "page at byte " + std::to_string(ogg_max_logical_streams * page_bytes) + " "));
  CHECK(decode_audio_bytes(file).error().code == errc::unsupported);

  // Exactly at the limit the stream count is not what is refused (libopusfile may still refuse
  // the headerless streams for what they are).
  auto at_limit = probe_ogg_opus(many_streams(static_cast<uint32_t>(ogg_max_logical_streams)));
  if (!at_limit) {
    CAPTURE(at_limit.error().message);
    CHECK_FALSE(has(at_limit.error().message, "logical streams"));
  }
}

TEST_CASE("ogg opus reader: the pieces, put together, are decode_ogg_opus's output") {
  t::temp_dir dir;
  REQUIRE(t::sox("-D -n -r 48000 -c 2 -b 16 " + dir.file("st.wav") + " synth 1.5 sine 440 sine 1000 gain -6"));
  REQUIRE(t::run("opusenc --quiet " + dir.file("st.wav") + " " + dir.file("st.opus")) == 0);
  const bytes_t file = t::read_bytes(dir.file("st.opus"));
  auto whole = decode_ogg_opus(file);
  REQUIRE(whole);
  auto reader = ogg_opus_reader::open(file);
  REQUIRE(reader);
  CHECK(reader->info().channels == 2);
  CHECK(reader->info().num_samples == 72000);
  std::vector<std::vector<float>> joined(2), piece;
  std::size_t pieces = 0;
  for (;;) {
    auto n = reader->read(piece);
    REQUIRE(n);
    if (*n == 0) break;
    ++pieces;
    REQUIRE(piece.size() == 2);
    CHECK(*n <= 5760);  // one Opus frame at most (120 ms at 48 kHz)
    for (std::size_t c = 0; c < 2; ++c) joined[c].insert(joined[c].end(), piece[c].begin(), piece[c].end());
  }
  CHECK(pieces > 1);
  CHECK(joined == whole->channels);
}

TEST_SUITE_END();
