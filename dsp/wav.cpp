#include "dsp/wav.hpp"

#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::dsp {
namespace {

constexpr std::size_t fourcc_bytes = 4;
constexpr std::size_t riff_header_bytes = 12;  // "RIFF" size "WAVE"
constexpr std::size_t form_type_offset = 8;
constexpr std::size_t chunk_header_bytes = 8;  // id, 32-bit size
constexpr std::size_t ds64_min_bytes = 24;     // riff size, data size, sample count (64-bit each)
constexpr std::size_t ds64_data_size_offset = 8;
constexpr std::size_t fmt_min_bytes = 16;
constexpr std::size_t fmt_channels_offset = 2;
constexpr std::size_t fmt_sample_rate_offset = 4;
constexpr std::size_t fmt_block_align_offset = 12;
constexpr std::size_t fmt_bits_offset = 14;
constexpr std::size_t fmt_cb_size_offset = 16;
constexpr std::size_t fmt_valid_bits_offset = 18;
constexpr std::size_t subformat_tag_bytes = 2;
constexpr std::size_t fmt_extensible_bytes = 40;
constexpr std::size_t extensible_cb_size = 22;
constexpr std::size_t subformat_offset = 24;
constexpr int bits_per_byte = 8;
constexpr int max_pcm_bits = 32;

constexpr uint16_t tag_pcm = 0x0001;
constexpr uint16_t tag_float = 0x0003;
constexpr uint16_t tag_alaw = 0x0006;
constexpr uint16_t tag_mulaw = 0x0007;
constexpr uint16_t tag_extensible = 0xFFFE;

// Every KSDATAFORMAT_SUBTYPE_* GUID for a classic format tag is the tag followed by these bytes.
constexpr std::array<uint8_t, 14> subformat_guid_tail = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
                                                         0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};

uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t le64(const uint8_t* p) {
  return static_cast<uint64_t>(le32(p)) | (static_cast<uint64_t>(le32(p + 4)) << 32);
}

bool is_fourcc(const uint8_t* p, std::string_view id) {
  return std::string_view(reinterpret_cast<const char*>(p), fourcc_bytes) == id;
}

// A chunk id as text for messages; unprintable bytes are escaped so garbage stays readable.
std::string fourcc_text(const uint8_t* p) {
  std::string s = "'";
  for (std::size_t i = 0; i < fourcc_bytes; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7F) {
      s += static_cast<char>(p[i]);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", p[i]);
      s += buf;
    }
  }
  return s + "'";
}

std::string hex_tag(uint16_t tag) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04X", tag);
  return buf;
}

// Names of formats people actually meet in call recordings, so the error says what the file is.
const char* known_tag_name(uint16_t tag) {
  switch (tag) {
    case 0x0002:
      return " (Microsoft ADPCM)";
    case 0x0011:
      return " (IMA ADPCM)";
    case 0x0031:
      return " (GSM 6.10)";
    case 0x0040:
      return " (G.721 ADPCM)";
    case 0x0055:
      return " (MPEG layer 3)";
    case 0x0064:
      return " (G.726 ADPCM)";
    default:
      return "";
  }
}

struct chunks {
  std::optional<std::span<const uint8_t>> fmt;
  std::optional<std::size_t> data_offset;
  std::size_t data_size = 0;
  bool data_size_unknown = false;  // plain RIFF streaming header: data runs to the end
  std::size_t trailing_bytes = 0;  // bytes after the last whole chunk header
};

// Walks the chunk list after the 12-byte RIFF header. Sizes are checked against what is left
// before anything is added to an offset, so no size in the file can overflow or point outside.
result<chunks> walk_chunks(std::span<const uint8_t> bytes, bool rf64) {
  chunks found;
  std::optional<uint64_t> ds64_data_size;
  std::size_t pos = riff_header_bytes;
  while (bytes.size() - pos >= chunk_header_bytes) {
    const uint8_t* head = bytes.data() + pos;
    const uint64_t size = le32(head + fourcc_bytes);
    const std::size_t body = pos + chunk_header_bytes;
    const std::size_t left = bytes.size() - body;

    if (is_fourcc(head, "data")) {
      uint64_t announced = size;
      if (rf64 && size == wav_unknown_data_size) {
        if (!ds64_data_size)
          return fail(
              errc::corrupt,
              "wav: RF64 data chunk size is 0xFFFFFFFF but there is no ds64 chunk before it");
        announced = *ds64_data_size;
      } else if (!rf64 && size == wav_unknown_data_size) {
        announced = left;
        found.data_size_unknown = true;
      }
      if (announced > left)
        return fail(errc::truncated, "wav: data chunk at byte " + std::to_string(pos) +
                                         " announces " + std::to_string(announced) +
                                         " bytes but only " + std::to_string(left) +
                                         " are present");
      if (!found.data_offset) {
        found.data_offset = body;
        found.data_size = static_cast<std::size_t>(announced);
      }
      if (found.fmt) return found;
      pos = body + static_cast<std::size_t>(announced);
      if (announced % 2 && pos < bytes.size()) ++pos;
      continue;
    }

    if (size > left) {
      // A broken chunk after everything we need (a truncated trailing LIST) costs no audio.
      if (found.fmt && found.data_offset) return found;
      return fail(errc::truncated, "wav: chunk " + fourcc_text(head) + " at byte " +
                                       std::to_string(pos) + " announces " + std::to_string(size) +
                                       " bytes but only " + std::to_string(left) + " are present");
    }
    if (is_fourcc(head, "fmt ") && !found.fmt) {
      found.fmt = bytes.subspan(body, static_cast<std::size_t>(size));
    } else if (rf64 && is_fourcc(head, "ds64")) {
      if (size < ds64_min_bytes)
        return fail(errc::corrupt, "wav: ds64 chunk is " + std::to_string(size) +
                                       " bytes, at least " + std::to_string(ds64_min_bytes) +
                                       " needed");
      ds64_data_size = le64(bytes.data() + body + ds64_data_size_offset);
    }
    pos = body + static_cast<std::size_t>(size);
    if (size % 2 && pos < bytes.size()) ++pos;  // RIFF pads odd chunks to an even length
  }
  found.trailing_bytes = bytes.size() - pos;
  return found;
}

struct format {
  uint16_t tag = 0;
  bool extensible = false;
  sample_encoding encoding = sample_encoding::pcm_s16le;
};

result<format> read_format_tag(std::span<const uint8_t> fmt, uint16_t bits) {
  format f;
  f.tag = le16(fmt.data());
  if (f.tag == tag_extensible) {
    f.extensible = true;
    if (fmt.size() < fmt_extensible_bytes)
      return fail(errc::corrupt, "wav: WAVE_FORMAT_EXTENSIBLE fmt chunk is " +
                                     std::to_string(fmt.size()) + " bytes, " +
                                     std::to_string(fmt_extensible_bytes) + " needed");
    const uint16_t cb_size = le16(fmt.data() + fmt_cb_size_offset);
    if (cb_size < extensible_cb_size)
      return fail(errc::corrupt, "wav: WAVE_FORMAT_EXTENSIBLE extension is " +
                                     std::to_string(cb_size) + " bytes, " +
                                     std::to_string(extensible_cb_size) + " needed");
    const uint16_t valid_bits = le16(fmt.data() + fmt_valid_bits_offset);
    if (valid_bits > bits)
      return fail(errc::corrupt, "wav: " + std::to_string(valid_bits) + " valid bits in a " +
                                     std::to_string(bits) + "-bit sample container");
    const uint8_t* guid = fmt.data() + subformat_offset;
    for (std::size_t i = 0; i < subformat_guid_tail.size(); ++i)
      if (guid[subformat_tag_bytes + i] != subformat_guid_tail[i])
        return fail(errc::unsupported,
                    "wav: WAVE_FORMAT_EXTENSIBLE subformat GUID is not a "
                    "standard format-tag GUID (first word " +
                        hex_tag(le16(guid)) + ")");
    f.tag = le16(guid);
  }

  const std::string bits_text = std::to_string(bits) + " bits per sample";
  switch (f.tag) {
    case tag_pcm:
      // Samples sit in whole bytes, left-justified; 12-bit PCM is read as 16-bit.
      switch ((bits + bits_per_byte - 1) / bits_per_byte) {
        case 1:
          f.encoding = sample_encoding::pcm_u8;
          return f;
        case 2:
          f.encoding = sample_encoding::pcm_s16le;
          return f;
        case 3:
          f.encoding = sample_encoding::pcm_s24le;
          return f;
        case 4:
          f.encoding = sample_encoding::pcm_s32le;
          return f;
        default:
          return fail(errc::unsupported, "wav: PCM with " + bits_text + " (1 to " +
                                             std::to_string(max_pcm_bits) + " supported)");
      }
    case tag_float:
      if (bits == 32)
        f.encoding = sample_encoding::pcm_f32le;
      else if (bits == 64)
        f.encoding = sample_encoding::pcm_f64le;
      else
        return fail(errc::unsupported,
                    "wav: IEEE float with " + bits_text + " (32 or 64 supported)");
      return f;
    case tag_alaw:
    case tag_mulaw:
      if (bits != bits_per_byte)
        return fail(errc::unsupported, std::string("wav: ") +
                                           (f.tag == tag_alaw ? "A-law" : "mu-law") + " with " +
                                           bits_text + " (8 expected)");
      f.encoding = f.tag == tag_alaw ? sample_encoding::alaw : sample_encoding::mulaw;
      return f;
    default:
      return fail(errc::unsupported,
                  "wav: format tag " + hex_tag(f.tag) + " (" + std::to_string(f.tag) + ")" +
                      known_tag_name(f.tag) +
                      " is not supported; PCM, IEEE float, mu-law and A-law are");
  }
}

}  // namespace

result<wav_layout> parse_wav(std::span<const uint8_t> bytes) {
  if (bytes.size() < riff_header_bytes)
    return fail(errc::truncated, "wav: " + std::to_string(bytes.size()) +
                                     " bytes is too short for a RIFF header (" +
                                     std::to_string(riff_header_bytes) + " bytes)");
  wav_layout layout;
  if (is_fourcc(bytes.data(), "RF64") || is_fourcc(bytes.data(), "BW64")) {
    layout.rf64 = true;
  } else if (!is_fourcc(bytes.data(), "RIFF")) {
    return fail(errc::corrupt,
                "wav: not a RIFF file (starts with " + fourcc_text(bytes.data()) + ")");
  }
  if (!is_fourcc(bytes.data() + form_type_offset, "WAVE"))
    return fail(errc::corrupt, "wav: RIFF form type is " +
                                   fourcc_text(bytes.data() + form_type_offset) + ", not 'WAVE'");

  auto found = walk_chunks(bytes, layout.rf64);
  if (!found) return tl::unexpected(found.error());
  // A file cut inside a chunk header lost the chunk; otherwise the chunk was never written.
  const bool cut = found->trailing_bytes > 0;
  const std::string cut_note = cut ? " (the file ends inside a chunk header)" : "";
  if (!found->fmt)
    return fail(cut ? errc::truncated : errc::corrupt, "wav: no fmt chunk" + cut_note);
  if (!found->data_offset)
    return fail(cut ? errc::truncated : errc::corrupt, "wav: no data chunk" + cut_note);

  const std::span<const uint8_t> fmt = *found->fmt;
  if (fmt.size() < fmt_min_bytes)
    return fail(errc::corrupt, "wav: fmt chunk is " + std::to_string(fmt.size()) +
                                   " bytes, at least " + std::to_string(fmt_min_bytes) + " needed");
  const uint16_t channels = le16(fmt.data() + fmt_channels_offset);
  const uint32_t sample_rate = le32(fmt.data() + fmt_sample_rate_offset);
  const uint16_t block_align = le16(fmt.data() + fmt_block_align_offset);
  const uint16_t bits = le16(fmt.data() + fmt_bits_offset);
  if (auto ok = check_stream_shape("wav", sample_rate, channels); !ok)
    return tl::unexpected(ok.error());
  auto f = read_format_tag(fmt, bits);
  if (!f) return tl::unexpected(f.error());

  const std::size_t sample_bytes = bytes_per_sample(f->encoding);
  const std::size_t expected_align = sample_bytes * channels;
  if (block_align != expected_align)
    return fail(errc::corrupt, "wav: block_align is " + std::to_string(block_align) + " but " +
                                   std::to_string(channels) + " channels of " +
                                   std::to_string(sample_bytes) + "-byte samples need " +
                                   std::to_string(expected_align));

  std::size_t data_size = found->data_size;
  if (found->data_size_unknown) {
    data_size -= data_size % expected_align;
  } else if (data_size % expected_align != 0) {
    return fail(errc::corrupt, "wav: data chunk is " + std::to_string(data_size) +
                                   " bytes, not a whole number of " +
                                   std::to_string(expected_align) + "-byte frames");
  }

  layout.extensible = f->extensible;
  layout.format_tag = f->tag;
  layout.encoding = f->encoding;
  layout.sample_rate = static_cast<int>(sample_rate);
  layout.channels = channels;
  layout.block_align = expected_align;
  layout.data_offset = *found->data_offset;
  layout.data_size = data_size;
  return layout;
}

result<audio> decode_wav(std::span<const uint8_t> bytes) {
  auto layout = parse_wav(bytes);
  if (!layout) return tl::unexpected(layout.error());
  auto planar = deinterleave(bytes.subspan(layout->data_offset, layout->data_size),
                             layout->encoding, layout->channels);
  if (!planar) return tl::unexpected(planar.error());
  return audio{layout->sample_rate, std::move(*planar)};
}

}  // namespace sluice::dsp
