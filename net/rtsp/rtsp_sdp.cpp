#include "net/rtsp/rtsp_sdp.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "net/words.hpp"

namespace sluice::net::rtsp {

namespace {
constexpr int g711_rate = 8000;
constexpr int g722_audio_rate = 16000;  // G.722 samples at 16 kHz on an 8 kHz RTP clock (RFC 3551 4.5.2)
constexpr int l16_min_rate = 8000, l16_max_rate = 48000;
constexpr int l16_max_channels = 2;
constexpr int max_payload_type = 127;
constexpr std::size_t max_line = 4096;
// RFC 3551 static payload types sluice takes without an rtpmap; 10/11 are L16 at 44.1 kHz.
constexpr int pt_pcmu = 0, pt_pcma = 8, pt_g722 = 9, pt_l16_stereo = 10, pt_l16_mono = 11;
constexpr int l16_static_rate = 44100;
// RFC 7587 7: Opus is always "opus/48000/2" in an rtpmap, whatever it was encoded at; sluice
// decodes it at 16 kHz mono (the recogniser's rate; libopus mixes stereo down).
constexpr int opus_clock = 48000, opus_audio_rate = 16000;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

int to_int(std::string_view s, int fallback) {
  if (s.empty() || s.size() > 6) return fallback;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return fallback;
    v = v * 10 + (c - '0');
  }
  return v;
}

std::string resolve(const std::string& base, std::string_view control) {
  if (control.empty() || control == "*") return base;
  if (lower(control.substr(0, 7)) == "rtsp://") return std::string(control);
  std::string b = base;
  if (!b.empty() && b.back() != '/') b += '/';
  return b + std::string(control);
}

struct rtpmap {
  std::string name;
  int clock = 0, channels = 1;
};

struct media_lines {
  std::string kind, proto;
  std::vector<int> pts;
  std::map<int, rtpmap> maps;
  std::string control;
};

bool choose(const media_lines& m, rtsp_media& out) {
  if (m.kind != "audio" || (m.proto != "rtp/avp" && m.proto != "rtp/avp/tcp" && m.proto != "rtp/avp/udp")) return false;
  for (int pt : m.pts) {
    auto it = m.maps.find(pt);
    const std::string name = it != m.maps.end() ? lower(it->second.name) : "";
    const int clock = it != m.maps.end() ? it->second.clock : 0;
    const int ch = it != m.maps.end() ? it->second.channels : 1;
    out.payload_type = static_cast<uint8_t>(pt);
    if (name == "pcmu" || (name.empty() && pt == pt_pcmu)) {
      out.codec = rtsp_codec::pcmu;
      out.clock_rate = out.sample_rate = g711_rate;
    } else if (name == "pcma" || (name.empty() && pt == pt_pcma)) {
      out.codec = rtsp_codec::pcma;
      out.clock_rate = out.sample_rate = g711_rate;
    } else if (name == "g722" || (name.empty() && pt == pt_g722)) {
      out.codec = rtsp_codec::g722;
      out.clock_rate = g711_rate;
      out.sample_rate = g722_audio_rate;
    } else if (name == "opus") {
      if (clock != opus_clock) continue;
      out.codec = rtsp_codec::opus;
      out.clock_rate = opus_clock;
      out.sample_rate = opus_audio_rate;
    } else if (name == "l16" || (name.empty() && (pt == pt_l16_mono || pt == pt_l16_stereo))) {
      const int rate = name.empty() ? l16_static_rate : clock;
      const int chans = name.empty() ? (pt == pt_l16_stereo ? 2 : 1) : ch;
      if (rate < l16_min_rate || rate > l16_max_rate || chans < 1 || chans > l16_max_channels) continue;
      out.codec = rtsp_codec::l16;
      out.clock_rate = out.sample_rate = rate;
      out.channels = chans;
    } else {
      continue;
    }
    if (it != m.maps.end() && out.codec != rtsp_codec::l16 && out.codec != rtsp_codec::opus && clock != 0 &&
        clock != g711_rate)
      continue;
    return true;
  }
  return false;
}
}  // namespace

const char* codec_name(rtsp_codec c) {
  switch (c) {
    case rtsp_codec::pcmu: return "PCMU";
    case rtsp_codec::pcma: return "PCMA";
    case rtsp_codec::g722: return "G722";
    case rtsp_codec::l16: return "L16";
    case rtsp_codec::opus: return "opus";
  }
  return "?";
}

std::size_t rtsp_description::taken() const {
  return static_cast<std::size_t>(std::count_if(media.begin(), media.end(), [](const auto& m) { return m.taken; }));
}

result<rtsp_description> parse_description(std::string_view sdp, const std::string& base, std::size_t max_media) {
  std::vector<media_lines> lines;
  std::string session_control;
  bool saw_version = false;
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos < sdp.size();) {
    auto nl = sdp.find('\n', pos);
    if (nl == std::string_view::npos) nl = sdp.size();
    const auto line = trim(sdp.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (line.empty()) continue;
    if (line.size() > max_line) return fail(errc::corrupt, "sdp: line " + std::to_string(line_no) + " is too long");
    if (line.size() < 2 || line[1] != '=')
      return fail(errc::corrupt, "sdp: line " + std::to_string(line_no) + " is not <type>=<value>");
    const char type = line[0];
    const auto value = line.substr(2);
    if (type == 'v') saw_version = true;
    if (!saw_version) return fail(errc::corrupt, "sdp: does not start with v=");
    if (type == 'm') {
      if (lines.size() >= max_media)
        return fail(errc::limit_exceeded, "sdp: more than " + std::to_string(max_media) + " media");
      media_lines m;
      const auto f = words(value);
      if (f.size() < 4) return fail(errc::corrupt, "sdp: m= line " + std::to_string(line_no) + " has too few fields");
      m.kind = lower(f[0]);
      m.proto = lower(f[2]);
      for (std::size_t i = 3; i < f.size(); ++i) {
        const int pt = to_int(f[i], -1);
        if (pt >= 0 && pt <= max_payload_type) m.pts.push_back(pt);
      }
      lines.push_back(std::move(m));
    } else if (type == 'a') {
      const auto colon = value.find(':');
      const auto attr = lower(value.substr(0, colon));
      const auto arg = colon == std::string_view::npos ? std::string_view{} : trim(value.substr(colon + 1));
      if (attr == "control") {
        if (lines.empty()) session_control = std::string(arg);
        else lines.back().control = std::string(arg);
      } else if (attr == "rtpmap" && !lines.empty()) {
        // "<pt> <name>/<clock>[/<channels>]"
        const auto sp = arg.find(' ');
        if (sp == std::string_view::npos) continue;
        const int pt = to_int(arg.substr(0, sp), -1);
        if (pt < 0 || pt > max_payload_type) continue;
        const auto enc = trim(arg.substr(sp + 1));
        const auto s1 = enc.find('/');
        rtpmap r;
        r.name = std::string(enc.substr(0, s1));
        if (s1 != std::string_view::npos) {
          const auto rest = enc.substr(s1 + 1);
          const auto s2 = rest.find('/');
          r.clock = to_int(rest.substr(0, s2), 0);
          if (s2 != std::string_view::npos) r.channels = to_int(rest.substr(s2 + 1), 0);
        }
        lines.back().maps[pt] = r;
      }
    }
  }
  if (!saw_version) return fail(errc::corrupt, "sdp: empty description");
  rtsp_description d;
  const std::string session_base = resolve(base, session_control);
  for (const auto& m : lines) {
    rtsp_media out;
    out.kind = m.kind;
    out.taken = choose(m, out);
    out.control = resolve(session_base, m.control);
    d.media.push_back(std::move(out));
  }
  if (d.taken() == 0) return fail(errc::unsupported, "sdp: no audio stream in PCMU, PCMA, G722, L16 or opus");
  return d;
}

sip::codec_choice sip_codec_of(const rtsp_media& m) {
  sip::codec_choice c;
  c.codec = m.codec == rtsp_codec::pcma   ? sip::audio_codec::pcma
            : m.codec == rtsp_codec::g722 ? sip::audio_codec::g722
            : m.codec == rtsp_codec::opus ? sip::audio_codec::opus
                                          : sip::audio_codec::pcmu;
  c.payload_type = m.payload_type;
  c.clock_rate = m.clock_rate;
  c.sample_rate = m.sample_rate;
  return c;
}

bool same_url(std::string_view url, std::string_view control) {
  auto strip = [](std::string_view s) {
    while (!s.empty() && s.back() == '/') s.remove_suffix(1);
    return s;
  };
  return strip(url) == strip(control);
}

std::string url_path(std::string_view url) {
  if (lower(url.substr(0, 7)) != "rtsp://") return {};
  const auto slash = url.find('/', 7);
  if (slash == std::string_view::npos) return {};
  auto path = url.substr(slash);
  if (const auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  return std::string(path);
}

}  // namespace sluice::net::rtsp
