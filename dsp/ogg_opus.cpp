#include "dsp/ogg_opus.hpp"

#include <opusfile.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::dsp {
namespace {

// Ogg page layout (RFC 3533 §6): a 27-byte header ending in the segment count, then the
// segment table (one lacing byte per segment), then the body (the sum of the lacing values).
constexpr std::string_view capture_pattern = "OggS";
constexpr std::size_t page_header_bytes = 27;
constexpr std::size_t header_type_offset = 5;
constexpr std::size_t serial_offset = 14;
constexpr std::size_t sequence_offset = 18;
constexpr std::size_t crc_offset = 22;
constexpr std::size_t crc_bytes = 4;
constexpr std::size_t segment_count_offset = 26;
constexpr uint8_t header_type_bos = 0x02;
constexpr uint8_t header_type_eos = 0x04;

// The page CRC (RFC 3533 §6): CRC-32 with polynomial 0x04C11DB7, not reflected, initial value 0,
// no final xor, over the whole page with the CRC field read as zero.
constexpr uint32_t crc_polynomial = 0x04C11DB7u;
constexpr uint32_t crc_top_bit = 0x80000000u;
constexpr int crc_shift = 24;
constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < table.size(); ++i) {
    uint32_t r = i << crc_shift;
    for (int bit = 0; bit < 8; ++bit) r = (r & crc_top_bit) ? (r << 1) ^ crc_polynomial : r << 1;
    table[i] = r;
  }
  return table;
}
constexpr std::array<uint32_t, 256> crc_table = make_crc_table();

// The first packet of a logical stream names its codec (RFC 7845 §5.1 for Opus).
constexpr std::string_view opus_head_magic = "OpusHead";
struct codec_magic {
  std::string_view magic;
  const char* name;
};
constexpr codec_magic other_codecs[] = {{"\x01vorbis", "Vorbis"},
                                        {"\x7F"
                                         "FLAC",
                                         "FLAC"},
                                        {"Speex   ", "Speex"},
                                        {"\x80theora", "Theora"}};

// libopus's largest frame: 120 ms at 48 kHz, per channel.
constexpr int max_frame_samples = 5760;

uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

uint32_t page_crc(std::span<const uint8_t> page) {
  uint32_t crc = 0;
  for (std::size_t i = 0; i < page.size(); ++i) {
    const uint8_t b = (i >= crc_offset && i < crc_offset + crc_bytes) ? 0 : page[i];
    crc = (crc << 8) ^ crc_table[((crc >> crc_shift) ^ b) & 0xFF];
  }
  return crc;
}

bool starts_with(std::span<const uint8_t> bytes, std::string_view prefix) {
  return bytes.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), bytes.begin(),
                    [](char a, uint8_t b) { return static_cast<uint8_t>(a) == b; });
}

// Walks the pages so a cut, damaged or padded file is reported as such: libopusfile silently
// skips damaged pages and decodes whatever whole pages it finds.
result<void> check_pages(std::span<const uint8_t> bytes) {
  std::size_t pos = 0;
  uint8_t last_header_type = 0;
  // The next page sequence number of each logical stream, by serial, so a page cut out is
  // noticed. A hash map keeps the walk linear in the number of pages whatever the number of
  // streams (a scan of a list made a file of many tiny streams quadratic).
  std::unordered_map<uint32_t, uint32_t> next_sequence;
  while (pos < bytes.size()) {
    const std::size_t left = bytes.size() - pos;
    const std::span<const uint8_t> page = bytes.subspan(pos);
    if (!starts_with(page, capture_pattern.substr(0, std::min(left, capture_pattern.size()))))
      return fail(errc::corrupt, "ogg: no page at byte " + std::to_string(pos) +
                                     " (expected the 'OggS' capture pattern)");
    if (left < page_header_bytes)
      return fail(errc::truncated, "ogg: the file ends inside a page header at byte " +
                                       std::to_string(pos) + " (" + std::to_string(left) + " of " +
                                       std::to_string(page_header_bytes) + " bytes)");
    const std::size_t segments = page[segment_count_offset];
    if (left < page_header_bytes + segments)
      return fail(
          errc::truncated,
          "ogg: the file ends inside the segment table of the page at byte " + std::to_string(pos));
    std::size_t page_bytes = page_header_bytes + segments;
    for (std::size_t i = 0; i < segments; ++i) page_bytes += page[page_header_bytes + i];
    if (page_bytes > left)
      return fail(errc::truncated, "ogg: page at byte " + std::to_string(pos) + " announces " +
                                       std::to_string(page_bytes) + " bytes but only " +
                                       std::to_string(left) + " are present");
    const std::span<const uint8_t> whole = page.first(page_bytes);
    if (page_crc(whole) != le32(whole.data() + crc_offset))
      return fail(errc::corrupt, "ogg: page at byte " + std::to_string(pos) +
                                     " fails its CRC check (damaged data)");
    const uint32_t serial = le32(whole.data() + serial_offset);
    const uint32_t sequence = le32(whole.data() + sequence_offset);
    auto known = next_sequence.find(serial);
    // A stream's first page, or a chained link's BOS page reusing a serial, starts a new count.
    if (known == next_sequence.end()) {
      if (next_sequence.size() == ogg_max_logical_streams)
        return fail(errc::unsupported, "ogg: page at byte " + std::to_string(pos) +
                                           " starts logical stream " +
                                           std::to_string(ogg_max_logical_streams + 1) +
                                           "; at most " + std::to_string(ogg_max_logical_streams) +
                                           " logical streams are read from one file");
      known = next_sequence.emplace(serial, sequence).first;
    } else if (!(whole[header_type_offset] & header_type_bos) && sequence != known->second) {
      return fail(errc::corrupt, "ogg: page at byte " + std::to_string(pos) +
                                     " has sequence number " + std::to_string(sequence) +
                                     ", expected " + std::to_string(known->second) +
                                     " (pages are missing)");
    }
    known->second = sequence + 1;
    if (pos == 0) {
      const auto body =
          page.subspan(page_header_bytes + segments, page_bytes - page_header_bytes - segments);
      if (!starts_with(body, opus_head_magic)) {
        for (const auto& other : other_codecs)
          if (starts_with(body, other.magic))
            return fail(errc::unsupported,
                        std::string("ogg: the file holds ") + other.name + ", not Opus");
        return fail(errc::unsupported, "ogg: the first stream is not Opus (no OpusHead packet)");
      }
    }
    last_header_type = page[header_type_offset];
    pos += page_bytes;
  }
  if (bytes.empty()) return fail(errc::truncated, "ogg: empty input");
  if (!(last_header_type & header_type_eos))
    return fail(errc::truncated,
                "ogg: the last page is not an end-of-stream page; the file was cut");
  return {};
}

const char* opusfile_error_name(int code) {
  switch (code) {
    case OP_FALSE:
      return "OP_FALSE (request did not succeed)";
    case OP_EOF:
      return "OP_EOF (unexpected end of file)";
    case OP_HOLE:
      return "OP_HOLE (missing or damaged pages)";
    case OP_EREAD:
      return "OP_EREAD (read failed)";
    case OP_EFAULT:
      return "OP_EFAULT (allocation or internal failure)";
    case OP_EIMPL:
      return "OP_EIMPL (feature not implemented)";
    case OP_EINVAL:
      return "OP_EINVAL (invalid argument)";
    case OP_ENOTFORMAT:
      return "OP_ENOTFORMAT (no Opus stream found)";
    case OP_EBADHEADER:
      return "OP_EBADHEADER (malformed header packet)";
    case OP_EVERSION:
      return "OP_EVERSION (unknown Opus header version)";
    case OP_ENOTAUDIO:
      return "OP_ENOTAUDIO";
    case OP_EBADPACKET:
      return "OP_EBADPACKET (a packet failed to decode)";
    case OP_EBADLINK:
      return "OP_EBADLINK (malformed stream structure)";
    case OP_ENOSEEK:
      return "OP_ENOSEEK";
    case OP_EBADTIMESTAMP:
      return "OP_EBADTIMESTAMP (invalid granule position)";
    default:
      return "unknown libopusfile error";
  }
}

tl::unexpected<error> opusfile_fail(const std::string& what, int code) {
  errc c = errc::corrupt;
  if (code == OP_EIMPL || code == OP_EVERSION) c = errc::unsupported;
  if (code == OP_EFAULT || code == OP_EREAD || code == OP_EINVAL) c = errc::internal;
  return fail(
      c, "ogg: " + what + ": " + opusfile_error_name(code) + " (" + std::to_string(code) + ")");
}

}  // namespace

void ogg_opus_reader::file_closer::operator()(::OggOpusFile* of) const { op_free(of); }
ogg_opus_reader::~ogg_opus_reader() = default;
ogg_opus_reader::ogg_opus_reader(ogg_opus_reader&&) noexcept = default;
ogg_opus_reader& ogg_opus_reader::operator=(ogg_opus_reader&&) noexcept = default;

result<ogg_opus_reader> ogg_opus_reader::open(std::span<const uint8_t> bytes) {
  if (auto ok = check_pages(bytes); !ok) return tl::unexpected(ok.error());
  int err = 0;
  ogg_opus_reader r;
  r.file_.reset(op_open_memory(bytes.data(), bytes.size(), &err));
  if (!r.file_) return opusfile_fail("cannot open the Opus stream", err);
  OggOpusFile* of = r.file_.get();
  r.info_.channels = op_channel_count(of, 0);
  const int links = op_link_count(of);
  for (int li = 1; li < links; ++li)
    if (op_channel_count(of, li) != r.info_.channels)
      return fail(errc::unsupported, "ogg: chained link " + std::to_string(li) + " has " +
                                         std::to_string(op_channel_count(of, li)) +
                                         " channels, the first " + std::to_string(r.info_.channels));
  const ogg_int64_t total = op_pcm_total(of, -1);
  if (total < 0) return opusfile_fail("cannot tell the stream's length", static_cast<int>(total));
  constexpr ogg_int64_t max_samples =
      static_cast<ogg_int64_t>(ogg_opus_max_duration_s) * ogg_opus_sample_rate;
  if (total > max_samples)
    return fail(errc::unsupported,
                "ogg: the stream claims " + std::to_string(total / ogg_opus_sample_rate) +
                    " s, more than the " + std::to_string(ogg_opus_max_duration_s) +
                    " s decoded at most");
  r.info_.num_samples = static_cast<uint64_t>(total);
  if (const OpusHead* head = op_head(of, 0))
    r.info_.input_sample_rate = static_cast<int>(head->input_sample_rate);
  r.interleaved_.resize(static_cast<std::size_t>(max_frame_samples) *
                        static_cast<std::size_t>(r.info_.channels));
  return r;
}

result<std::size_t> ogg_opus_reader::read(std::vector<std::vector<float>>& out) {
  const auto channels = static_cast<std::size_t>(info_.channels);
  out.resize(channels);
  for (auto& ch : out) ch.clear();
  const int n = op_read_float(file_.get(), interleaved_.data(),
                              static_cast<int>(interleaved_.size()), nullptr);
  if (n < 0)
    return opusfile_fail("decoding failed after " + std::to_string(samples_read_) + " samples", n);
  constexpr std::size_t max_samples =
      static_cast<std::size_t>(ogg_opus_max_duration_s) * ogg_opus_sample_rate;
  if (samples_read_ + static_cast<std::size_t>(n) > max_samples)
    return fail(errc::unsupported, "ogg: the stream decodes to more than " +
                                       std::to_string(ogg_opus_max_duration_s) + " s");
  const float* p = interleaved_.data();
  for (auto& ch : out) ch.resize(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    for (std::size_t c = 0; c < channels; ++c) out[c][static_cast<std::size_t>(i)] = std::clamp(*p++, -1.0f, 1.0f);
  samples_read_ += static_cast<std::size_t>(n);
  return static_cast<std::size_t>(n);
}

result<ogg_opus_info> probe_ogg_opus(std::span<const uint8_t> bytes) {
  auto r = ogg_opus_reader::open(bytes);
  if (!r) return tl::unexpected(r.error());
  return r->info();
}

result<audio> decode_ogg_opus(std::span<const uint8_t> bytes) {
  auto r = ogg_opus_reader::open(bytes);
  if (!r) return tl::unexpected(r.error());
  audio out;
  out.sample_rate = ogg_opus_sample_rate;
  out.channels.resize(static_cast<std::size_t>(r->info().channels));
  for (auto& ch : out.channels) ch.reserve(r->info().num_samples);
  std::vector<std::vector<float>> piece;
  for (;;) {
    auto n = r->read(piece);
    if (!n) return tl::unexpected(n.error());
    if (*n == 0) break;
    for (std::size_t c = 0; c < out.channels.size(); ++c)
      out.channels[c].insert(out.channels[c].end(), piece[c].begin(), piece[c].end());
  }
  return out;
}

}  // namespace sluice::dsp
