#include "net/sip/sdp_offer.hpp"

#include <sofia-sip/sdp.h>
#include <sofia-sip/su_alloc.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <strings.h>

#include <openssl/rand.h>

#include "net/base64.hpp"
#include "net/words.hpp"

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
  std::size_t word = 0;
  for (const auto w : words(m)) {
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

struct suite_info {
  srtp_suite suite;
  const char* name;
  std::size_t key_bytes;  // master key + master salt
};
// RFC 4568 6.2 (AES_CM_128: 128-bit key, 112-bit salt), RFC 6188 (AES_256_CM: 256, 112),
// RFC 7714 12 (AEAD_AES_128_GCM / 256: 128 or 256, 96-bit salt).
constexpr suite_info suites[] = {
    {srtp_suite::aes_cm_128_hmac_sha1_80, "AES_CM_128_HMAC_SHA1_80", 30},
    {srtp_suite::aes_cm_128_hmac_sha1_32, "AES_CM_128_HMAC_SHA1_32", 30},
    {srtp_suite::aes_256_cm_hmac_sha1_80, "AES_256_CM_HMAC_SHA1_80", 46},
    {srtp_suite::aes_256_cm_hmac_sha1_32, "AES_256_CM_HMAC_SHA1_32", 46},
    {srtp_suite::aead_aes_128_gcm, "AEAD_AES_128_GCM", 28},
    {srtp_suite::aead_aes_256_gcm, "AEAD_AES_256_GCM", 44},
};
constexpr std::size_t max_tag_digits = 9;  // RFC 4568 9.1: tag = 1*9DIGIT

const suite_info& info_of(srtp_suite s) {
  for (const auto& i : suites)
    if (i.suite == s) return i;
  return suites[0];
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

const char* suite_name(srtp_suite s) { return info_of(s).name; }
std::size_t suite_key_bytes(srtp_suite s) { return info_of(s).key_bytes; }

result<sdes_crypto> parse_crypto(std::string_view value) {
  // tag SP suite SP key-params *(SP session-param)
  const auto words = net::words(value, " \t");
  if (words.size() < 3) return fail(errc::corrupt, "a=crypto: not \"<tag> <suite> inline:<key>\"");
  sdes_crypto c;
  if (!all_digits(words[0]) || words[0].size() > max_tag_digits)
    return fail(errc::corrupt, "a=crypto: the tag is not 1 to 9 digits");
  c.tag = static_cast<uint32_t>(std::strtoul(std::string(words[0]).c_str(), nullptr, 10));
  const suite_info* suite = nullptr;
  for (const auto& i : suites)
    if (words[1] == i.name) suite = &i;
  if (!suite) return fail(errc::unsupported, "a=crypto: suite " + std::string(words[1].substr(0, 64)) + " is not taken");
  c.suite = suite->suite;
  for (std::size_t i = 3; i < words.size(); ++i)
    if (words[i].substr(0, 4) != "WSH=")
      return fail(errc::unsupported, "a=crypto: session parameter " + std::string(words[i].substr(0, 64)) + " is not taken");
  auto params = words[2];
  if (params.find(';') != std::string_view::npos)
    return fail(errc::unsupported, "a=crypto: several master keys (MKIs) are not taken");
  if (params.substr(0, 7) != "inline:") return fail(errc::corrupt, "a=crypto: the key method is not inline:");
  params.remove_prefix(7);
  // key-info = key-salt ["|" lifetime] ["|" mki]; mki = value ":" length, lifetime ["2^"]digits.
  std::vector<std::string_view> parts;
  for (std::size_t pos = 0;;) {
    const auto bar = params.find('|', pos);
    parts.push_back(params.substr(pos, bar == std::string_view::npos ? std::string_view::npos : bar - pos));
    if (bar == std::string_view::npos) break;
    pos = bar + 1;
  }
  if (parts.size() > 3) return fail(errc::corrupt, "a=crypto: more than key|lifetime|mki");
  for (std::size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].find(':') != std::string_view::npos) return fail(errc::unsupported, "a=crypto: an MKI is not taken");
    const auto digits = parts[i].substr(0, 2) == "2^" ? parts[i].substr(2) : parts[i];
    if (!all_digits(digits) || digits.size() > 20) return fail(errc::corrupt, "a=crypto: the key lifetime is not a number");
  }
  std::string b64(parts[0]);
  while (b64.size() % 4 != 0) b64 += '=';  // some peers leave the padding out
  auto key = decode_base64(b64);
  if (!key) return fail(errc::corrupt, "a=crypto: the key is not base64");
  if (key->size() != suite->key_bytes)
    return fail(errc::corrupt, std::string("a=crypto: ") + suite->name + " wants a " + std::to_string(suite->key_bytes) +
                                   "-byte key and salt, not " + std::to_string(key->size()));
  c.key = std::move(*key);
  return c;
}

std::string render_crypto(const sdes_crypto& c) {
  return std::to_string(c.tag) + " " + suite_name(c.suite) + " inline:" + encode_base64(c.key);
}

result<void> choose_local_keys(sdp_offer& offer, const sdp_offer* previous) {
  std::size_t k = 0;
  for (auto& s : offer.streams) {
    if (!s.accepted) continue;
    const offered_stream* before = nullptr;
    if (previous) {
      while (k < previous->streams.size() && !previous->streams[k].accepted) ++k;
      if (k < previous->streams.size()) before = &previous->streams[k++];
    }
    if (!s.secure) continue;
    s.local_crypto.tag = s.remote_crypto.tag;
    s.local_crypto.suite = s.remote_crypto.suite;
    if (before && before->secure && before->local_crypto.suite == s.remote_crypto.suite &&
        before->local_crypto.key.size() == suite_key_bytes(s.remote_crypto.suite)) {
      s.local_crypto.key = before->local_crypto.key;
      continue;
    }
    s.local_crypto.key.assign(suite_key_bytes(s.remote_crypto.suite), 0);
    if (RAND_bytes(s.local_crypto.key.data(), static_cast<int>(s.local_crypto.key.size())) != 1)
      return fail(errc::internal, "srtp: the random generator failed to make a key");
  }
  return {};
}

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

result<sdp_offer> parse_offer(std::string_view text, std::size_t max_streams, offer_policy policy) {
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
  // Why streams that would otherwise be taken were refused, for the error when none is.
  std::string srtp_refusal;
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
    if (m->m_proto_name) s.proto = m->m_proto_name;
    bool any_crypto = false;
    std::string crypto_error;
    for (auto* a = m->m_attributes; a; a = a->a_next) {
      if (same(a->a_name, "crypto")) {
        any_crypto = true;
        if (s.secure) continue;  // the first line we take wins (the offerer's order)
        auto c = parse_crypto(a->a_value ? a->a_value : "");
        if (c) {
          s.secure = true;
          s.remote_crypto = std::move(*c);
        } else if (crypto_error.empty()) {
          crypto_error = c.error().message;
        }
      }
      if (same(a->a_name, "label") && a->a_value) s.label = a->a_value;
      if (same(a->a_name, "rtcp-mux")) s.rtcp_mux = true;
      // RFC 3605: "a=rtcp:port [nettype addrtype address]"; only the port is taken.
      if (same(a->a_name, "rtcp") && a->a_value) {
        const unsigned long port = std::strtoul(a->a_value, nullptr, 10);
        if (port > 0 && port <= max_port) s.rtcp_port = static_cast<uint16_t>(port);
      }
    }
    // RTP/SAVP needs a usable a=crypto line; a=crypto on RTP/AVP makes it SRTP if we take it.
    const bool savp = m->m_proto == sdp_proto_srtp;
    bool srtp_ok = true;
    if (savp && policy.srtp == srtp_mode::off) {
      srtp_ok = false;
      srtp_refusal = "RTP/SAVP (SRTP) is offered and sip.srtp = \"off\"";
    } else if (savp && !policy.keys_allowed) {
      srtp_ok = false;
      srtp_refusal = "RTP/SAVP with SDES keys over SIP that is not TLS: the keys would travel in clear "
                     "(call over sips:, or set sip.srtp_plain_signalling)";
    } else if (savp && !s.secure) {
      srtp_ok = false;
      srtp_refusal = any_crypto ? "RTP/SAVP without an a=crypto line sluice takes (" + crypto_error + ")"
                                : std::string("RTP/SAVP without an a=crypto line");
    }
    if (!savp && (policy.srtp == srtp_mode::off || !policy.keys_allowed)) s.secure = false;  // answered plain
    if (policy.srtp == srtp_mode::require && !s.secure && srtp_ok) {
      srtp_ok = false;
      srtp_refusal = !policy.keys_allowed
                         ? "sip.srtp = \"require\" and SDES keys are taken only over SIP over TLS (sips:)"
                         : any_crypto ? "sip.srtp = \"require\" and no a=crypto line sluice takes (" + crypto_error + ")"
                                      : std::string("sip.srtp = \"require\" and the stream is plain RTP");
    }
    if (!srtp_ok) s.secure = false;
    const bool usable = m->m_type == sdp_media_audio && (m->m_proto == sdp_proto_rtp || savp) && srtp_ok &&
                        m->m_port > 0 && m->m_port <= max_port && !s.remote_address.empty() && !m->m_rejected;
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
  if (offer.accepted() == 0) {
    if (!srtp_refusal.empty()) return fail(errc::unsupported, "sdp: " + srtp_refusal);
    return fail(errc::unsupported, "sdp: no audio stream over RTP/AVP or RTP/SAVP with opus/48000, G722, PCMU or PCMA at 8000");
  }
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
    const auto port = ports[next_port++];
    // A secure stream without our key (choose_local_keys not called) cannot be answered.
    if (s.secure && s.local_crypto.key.empty()) {
      out += "m=" + s.media_line + "\r\n";
      continue;
    }
    const auto pt = std::to_string(s.codec.payload_type);
    out += "m=audio " + std::to_string(port) + " " + (s.secure ? s.proto : std::string("RTP/AVP")) + " " + pt;
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
    if (s.secure && !s.local_crypto.key.empty()) out += "a=crypto:" + render_crypto(s.local_crypto) + "\r\n";
    out += s.peer_sends ? "a=recvonly\r\n" : "a=inactive\r\n";
  }
  return out;
}

}  // namespace sluice::net::sip
