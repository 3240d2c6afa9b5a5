#include "dsp/audio_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "dsp/ogg_opus.hpp"
#include "dsp/wav.hpp"

namespace sluice::dsp {
namespace {

enum class container { wav, ogg };

constexpr std::size_t sniff_bytes = 4;
constexpr std::size_t preview_bytes = 8;  // shown in "unrecognised container" messages
constexpr std::size_t read_chunk_bytes = 1 << 16;

bool has_prefix(std::span<const uint8_t> bytes, std::string_view magic, std::size_t at = 0) {
  if (bytes.size() < at + magic.size()) return false;
  for (std::size_t i = 0; i < magic.size(); ++i)
    if (bytes[at + i] != static_cast<uint8_t>(magic[i])) return false;
  return true;
}

// Formats people send that we do not read, so the error can say what the file is.
struct foreign_format {
  std::string_view magic;
  std::size_t at;
  const char* name;
};
constexpr foreign_format foreign_formats[] = {
    {"ID3", 0, "MP3 (ID3 tag)"}, {"fLaC", 0, "FLAC"}, {"\x1A\x45\xDF\xA3", 0, "Matroska/WebM"},
    {"ftyp", 4, "MP4/M4A"},      {"#!AMR", 0, "AMR"}, {".snd", 0, "Sun/NeXT AU"},
    {"FORM", 0, "AIFF"},
};
constexpr uint8_t mpeg_sync_byte = 0xFF;
constexpr uint8_t mpeg_sync_mask = 0xE0;  // 11 sync bits: all of byte 0, the top 3 of byte 1

std::string preview(std::span<const uint8_t> bytes) {
  std::string s;
  for (std::size_t i = 0; i < std::min(bytes.size(), preview_bytes); ++i) {
    char buf[4];
    std::snprintf(buf, sizeof buf, "%02X", bytes[i]);
    s += (i ? " " : "") + std::string(buf);
  }
  return s;
}

result<container> sniff(std::span<const uint8_t> bytes) {
  if (bytes.size() < sniff_bytes)
    return fail(errc::truncated, "audio: " + std::to_string(bytes.size()) +
                                     " bytes is too short to recognise a container");
  if (has_prefix(bytes, "RIFF") || has_prefix(bytes, "RF64") || has_prefix(bytes, "BW64"))
    return container::wav;
  if (has_prefix(bytes, "OggS")) return container::ogg;
  for (const auto& f : foreign_formats)
    if (has_prefix(bytes, f.magic, f.at))
      return fail(errc::unsupported, std::string("audio: the input looks like ") + f.name +
                                         "; WAV and Ogg Opus are supported");
  if (bytes[0] == mpeg_sync_byte && (bytes[1] & mpeg_sync_mask) == mpeg_sync_mask)
    return fail(errc::unsupported,
                "audio: the input looks like MPEG audio (MP3/AAC frames); "
                "WAV and Ogg Opus are supported");
  return fail(errc::unsupported, "audio: unrecognised container (first bytes " + preview(bytes) +
                                     "); WAV and Ogg Opus are supported");
}

struct file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

result<std::vector<uint8_t>> read_file(const std::string& path) {
  std::unique_ptr<std::FILE, file_closer> f(std::fopen(path.c_str(), "rb"));
  if (!f) return fail(errc::io, "audio: cannot open '" + path + "': " + std::strerror(errno));
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> chunk(read_chunk_bytes);
  for (;;) {
    const std::size_t n = std::fread(chunk.data(), 1, chunk.size(), f.get());
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(n));
    if (n < chunk.size()) break;
  }
  // A directory opens on Linux but fails on the first read.
  if (std::ferror(f.get()))
    return fail(errc::io, "audio: cannot read '" + path + "': " + std::strerror(errno));
  return bytes;
}

}  // namespace

result<audio> decode_audio_bytes(std::span<const uint8_t> bytes) {
  auto kind = sniff(bytes);
  if (!kind) return tl::unexpected(kind.error());
  return *kind == container::wav ? decode_wav(bytes) : decode_ogg_opus(bytes);
}

result<audio_info> probe_audio_bytes(std::span<const uint8_t> bytes) {
  auto kind = sniff(bytes);
  if (!kind) return tl::unexpected(kind.error());
  audio_info info;
  if (*kind == container::wav) {
    auto layout = parse_wav(bytes);
    if (!layout) return tl::unexpected(layout.error());
    info.container = "wav";
    info.codec = to_string(layout->encoding);
    info.sample_rate = layout->sample_rate;
    info.channels = layout->channels;
    info.num_samples = layout->num_frames();
  } else {
    auto ogg = probe_ogg_opus(bytes);
    if (!ogg) return tl::unexpected(ogg.error());
    info.container = "ogg-opus";
    info.codec = "opus";
    info.sample_rate = ogg_opus_sample_rate;
    info.channels = ogg->channels;
    info.num_samples = ogg->num_samples;
  }
  info.duration_s = static_cast<double>(info.num_samples) / info.sample_rate;
  return info;
}

result<audio> decode_audio_file(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes) return tl::unexpected(bytes.error());
  return decode_audio_bytes(*bytes);
}

result<audio_info> probe_audio_file(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes) return tl::unexpected(bytes.error());
  return probe_audio_bytes(*bytes);
}

}  // namespace sluice::dsp
