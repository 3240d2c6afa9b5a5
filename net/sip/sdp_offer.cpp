#include "net/sip/sdp_offer.hpp"

#include <sofia-sip/sdp.h>
#include <sofia-sip/su_alloc.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <strings.h>

namespace sluice::net::sip {

namespace {

constexpr int narrowband_hz = 8000;
constexpr int wideband_hz = 16000;
// RFC 7587 4.1: Opus's RTP clock is 48 kHz and its rtpmap says 2 channels, whatever is sent.
constexpr int opus_clock_hz = 48000;
constexpr int opus_rtpmap_channels = 2;
constexpr uint8_t pt_pcmu = 0, pt_pcma = 8, pt_g722 = 9;
constexpr unsigned long max_port = 65535;
constexpr std::size_t max_offer_bytes = 64 * 1024;

// sofia's home (its allocator) and parser, freed together.
struct home_deleter {
  void operator()(su_home_t* h) const { su_home_unref(h); }
};
struct parser_deleter {
  void operator()(sdp_parser_t* p) const { sdp_parser_free(p); }
};

// sofia-sip 1.12.11's sdp_parse loops allocating until memory runs out on some m= lines: a
// format list with a character outside RFC 4566's token set under a transport it does not
// know ("m=audio 7002 X 0 ;"), and bytes >= 0x80 there. Both found by
// tests/fuzz/sdp_offer_fuzz.cpp. So before the parser sees an offer: no control characters, bytes
// >= 0x80 only in free text (RFC 4566 5: s=, i= may be UTF-8), every line of the form
// <letter>=<value> (" m=..." with a leading space is parsed as an m= line by sofia), and every word
// of an m= line made of token characters (RFC 4566's grammar for it).
bool token_char(unsigned char c) { return std::isalnum(c) || (c && std::strchr("!#$%&'*+-.^_`{|}~", c) != nullptr); }

// RFC 4566 5.14: media SP port ["/" integer] SP proto *("/" token) 1*(SP fmt), fmt a token.
bool valid_media_line(std::string_view m) {
  std::size_t word = 0, pos = 0;
  while (pos < m.size()) {
    auto end = m.find(' ', pos);
    if (end == std::string_view::npos) end = m.size();
    const auto w = m.substr(pos, end - pos);
    pos = end + 1;
    if (w.empty()) continue;
    bool ok = true;
    bool after_slash = true;  // no empty part before or after a '/'
    for (unsigned char c : w) {
      if (c == '/') {
        ok = ok && !after_slash && (word == 1 || word == 2);
        after_slash = true;
        continue;
      }
      ok = ok && (word == 1 ? std::isdigit(c) != 0 : token_char(c));
      after_slash = false;
    }
    if (!ok || after_slash) return false;
    ++word;
  }
  return word >= 4;
}

std::string unsafe_line(std::string_view text) {
  std::size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    ++line_no;
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    auto line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    // RFC 4566 5: every line is <type>=<value>, the type one lower-case letter, no space around
    // the '='. sofia-sip skips leading white space, so " m=..." would reach its m= parser unchecked.
    if (line.size() < 2 || line[0] < 'a' || line[0] > 'z' || line[1] != '=')
      return "sdp: line " + std::to_string(line_no) + " is not a <type>=<value> line of RFC 4566";
    const bool free_text = (line[0] == 's' || line[0] == 'i');
    for (unsigned char ch : line)
      if ((ch < 0x20 && ch != '\t') || ch == 0x7f || (ch >= 0x80 && !free_text))
        return "sdp: line " + std::to_string(line_no) + " has a byte SDP does not allow there";
    if (line[0] == 'm' && !valid_media_line(line.substr(2)))
      return "sdp: line " + std::to_string(line_no) + " is not an m= line of RFC 4566 (media port proto fmt...)";
  }
  return {};
}

bool same(const char* a, const char* b) { return a && b && strcasecmp(a, b) == 0; }

int preference(audio_codec c) {
  switch (c) {
    case audio_codec::opus: return 0;
    case audio_codec::g722: return 1;
    case audio_codec::pcmu: return 2;
    case audio_codec::pcma: return 3;
  }
  return 4;
}

// A payload type we take, from its rtpmap (or the static assignment when it has none).
bool codec_of(const sdp_rtpmap_t& rm, codec_choice& out) {
  out.payload_type = static_cast<uint8_t>(rm.rm_pt);
  out.clock_rate = narrowband_hz;
  if (same(rm.rm_encoding, "PCMU") && rm.rm_rate == narrowband_hz) out.codec = audio_codec::pcmu;
  else if (same(rm.rm_encoding, "PCMA") && rm.rm_rate == narrowband_hz) out.codec = audio_codec::pcma;
  // RFC 3551 4.5.2: G.722's RTP clock is 8000 although it samples at 16 kHz.
  else if (same(rm.rm_encoding, "G722") && rm.rm_rate == narrowband_hz) out.codec = audio_codec::g722;
  else if (same(rm.rm_encoding, "opus") && rm.rm_rate == opus_clock_hz) out.codec = audio_codec::opus;
  else return false;
  if (out.codec == audio_codec::opus) out.clock_rate = opus_clock_hz;
  // Opus decodes at any of its rates: 16 kHz is what the recogniser takes.
  out.sample_rate = out.codec == audio_codec::g722 || out.codec == audio_codec::opus ? wideband_hz : narrowband_hz;
  return true;
}

std::string media_line_of(const sdp_media_t& m) {
  std::string line = m.m_type_name ? m.m_type_name : "audio";
  line += " 0 ";
  line += m.m_proto_name ? m.m_proto_name : "RTP/AVP";
  bool any = false;
  for (auto* f = m.m_format; f; f = f->l_next) {
    if (!f->l_text) continue;
    line += " ";
    line += f->l_text;
    any = true;
  }
  for (auto* rm = m.m_rtpmaps; !any && rm; rm = rm->rm_next) {
    line += ' ';
    line += std::to_string(rm->rm_pt);
    any = true;
  }
  if (!any) line += " 0";
  return line;
}

}  // namespace

const char* codec_name(audio_codec c) {
  switch (c) {
    case audio_codec::pcmu: return "PCMU";
    case audio_codec::pcma: return "PCMA";
    case audio_codec::g722: return "G722";
    case audio_codec::opus: return "opus";
  }
  return "?";
}

std::size_t sdp_offer::accepted() const {
  std::size_t n = 0;
  for (const auto& s : streams) n += s.accepted;
  return n;
}

result<sdp_offer> parse_offer(std::string_view text, std::size_t max_streams) {
  if (text.empty()) return fail(errc::corrupt, "sdp: the offer is empty");
  if (text.size() > max_offer_bytes) return fail(errc::limit_exceeded, "sdp: the offer is over 64 KiB");
  if (auto bad = unsafe_line(text); !bad.empty()) return fail(errc::corrupt, bad);
  std::unique_ptr<su_home_t, home_deleter> home(static_cast<su_home_t*>(su_home_new(sizeof(su_home_t))));
  if (!home) return fail(errc::internal, "sdp: out of memory");
  std::unique_ptr<sdp_parser_t, parser_deleter> parser(
      sdp_parse(home.get(), text.data(), static_cast<issize_t>(text.size()), 0));
  if (!parser) return fail(errc::internal, "sdp: out of memory");
  if (const char* e = sdp_parsing_error(parser.get())) return fail(errc::corrupt, std::string("sdp: ") + e);
  const sdp_session_t* sess = sdp_session(parser.get());
  if (!sess) return fail(errc::corrupt, "sdp: no session description");

  sdp_offer offer;
  int index = 0;
  for (const sdp_media_t* m = sess->sdp_media; m; m = m->m_next, ++index) {
    if (offer.streams.size() >= max_streams)
      return fail(errc::limit_exceeded, "sdp: more than " + std::to_string(max_streams) + " media streams");
    offered_stream s;
    s.index = index;
    s.media_line = media_line_of(*m);
    const sdp_connection_t* c = m->m_connections ? m->m_connections : sess->sdp_connection;
    if (c && c->c_address) s.remote_address = c->c_address;
    s.remote_port = m->m_port <= max_port ? static_cast<uint16_t>(m->m_port) : 0;
    s.peer_sends = (m->m_mode & sdp_sendonly) != 0;
    for (auto* a = m->m_attributes; a; a = a->a_next) {
      if (same(a->a_name, "label") && a->a_value) s.label = a->a_value;
      if (same(a->a_name, "rtcp-mux")) s.rtcp_mux = true;
      // RFC 3605: "a=rtcp:port [nettype addrtype address]"; only the port is taken.
      if (same(a->a_name, "rtcp") && a->a_value) {
        const unsigned long port = std::strtoul(a->a_value, nullptr, 10);
        if (port > 0 && port <= max_port) s.rtcp_port = static_cast<uint16_t>(port);
      }
    }
    const bool usable = m->m_type == sdp_media_audio && m->m_proto == sdp_proto_rtp && m->m_port > 0 &&
                        m->m_port <= max_port && !s.remote_address.empty() && !m->m_rejected;
    bool have_codec = false;
    int cn_pt = -1;
    for (const sdp_rtpmap_t* rm = m->m_rtpmaps; usable && rm; rm = rm->rm_next) {
      if (same(rm->rm_encoding, "telephone-event") && rm->rm_rate == narrowband_hz) {
        if (s.telephone_event_pt < 0) s.telephone_event_pt = rm->rm_pt;
        continue;
      }
      if (same(rm->rm_encoding, "CN") && rm->rm_rate == narrowband_hz) {
        if (cn_pt < 0) cn_pt = rm->rm_pt;
        continue;
      }
      codec_choice c2;
      if (!codec_of(*rm, c2)) continue;
      if (!have_codec || preference(c2.codec) < preference(s.codec.codec)) {
        s.codec = c2;
        have_codec = true;
      }
    }
    // Every codec we take runs an 8 kHz RTP clock, the only CN clock we accept.
    const bool narrowband_clock = have_codec && s.codec.clock_rate == narrowband_hz;
    s.codec.comfort_noise_pt = narrowband_clock ? cn_pt : -1;
    // telephone-event is taken at 8 kHz only, which must be the codec's clock too (RFC 4733 2.1).
    if (have_codec && !narrowband_clock) s.telephone_event_pt = -1;
    s.accepted = usable && have_codec;
    offer.streams.push_back(std::move(s));
  }
  if (offer.streams.empty()) return fail(errc::corrupt, "sdp: no m= line");
  if (offer.accepted() == 0)
    return fail(errc::unsupported, "sdp: no audio stream over RTP/AVP with opus/48000, G722, PCMU or PCMA at 8000");
  return offer;
}

std::string render_answer(const sdp_offer& offer, const std::string& local_address, std::span<const uint16_t> ports,
                          uint64_t session_id, uint64_t session_version) {
  const bool v6 = local_address.find(':') != std::string::npos;
  const std::string addr = std::string(v6 ? "IN IP6 " : "IN IP4 ") + local_address;
  std::string out = "v=0\r\no=sluice " + std::to_string(session_id) + " " + std::to_string(session_version) + " " +
                    addr + "\r\ns=sluice\r\nc=" + addr + "\r\nt=0 0\r\n";
  std::size_t next_port = 0;
  for (const auto& s : offer.streams) {
    if (!s.accepted || next_port >= ports.size()) {
      out += "m=" + s.media_line + "\r\n";
      continue;
    }
    const auto pt = std::to_string(s.codec.payload_type);
    out += "m=audio " + std::to_string(ports[next_port++]) + " RTP/AVP " + pt;
    if (s.telephone_event_pt >= 0) out += " " + std::to_string(s.telephone_event_pt);
    if (s.codec.comfort_noise_pt >= 0) out += " " + std::to_string(s.codec.comfort_noise_pt);
    out += "\r\na=rtpmap:" + pt + " " + codec_name(s.codec.codec) + "/" + std::to_string(s.codec.clock_rate);
    if (s.codec.codec == audio_codec::opus) out += "/" + std::to_string(opus_rtpmap_channels);
    out += "\r\n";
    if (s.codec.comfort_noise_pt >= 0) out += "a=rtpmap:" + std::to_string(s.codec.comfort_noise_pt) + " CN/8000\r\n";
    if (s.telephone_event_pt >= 0) {
      const auto te = std::to_string(s.telephone_event_pt);
      out += "a=rtpmap:" + te + " telephone-event/8000\r\na=fmtp:" + te + " 0-16\r\n";
    }
    if (!s.label.empty()) out += "a=label:" + s.label + "\r\n";
    if (s.rtcp_mux) out += "a=rtcp-mux\r\n";
    out += s.peer_sends ? "a=recvonly\r\n" : "a=inactive\r\n";
  }
  return out;
}

}  // namespace sluice::net::sip
