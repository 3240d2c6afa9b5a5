#include "net/sip/siprec_metadata.hpp"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <cctype>
#include <cstring>
#include <memory>

namespace sluice::net::sip {

namespace {

constexpr std::size_t max_metadata_bytes = 64 * 1024;
constexpr std::size_t max_body_bytes = 256 * 1024;
constexpr std::size_t max_boundary = 70;  // RFC 2046 5.1.1
constexpr std::size_t max_parts = 16;

struct doc_deleter {
  void operator()(xmlDoc* d) const { xmlFreeDoc(d); }
};

bool named(const xmlNode* n, const char* local) {
  return n->type == XML_ELEMENT_NODE && n->name && std::strcmp(reinterpret_cast<const char*>(n->name), local) == 0;
}

std::string attr(const xmlNode* n, const char* name) {
  xmlChar* v = xmlGetProp(n, reinterpret_cast<const xmlChar*>(name));
  if (!v) return {};
  std::string s(reinterpret_cast<const char*>(v));
  xmlFree(v);
  return s;
}

std::string text_of(const xmlNode* n) {
  xmlChar* v = xmlNodeGetContent(n);
  if (!v) return {};
  std::string s(reinterpret_cast<const char*>(v));
  xmlFree(v);
  // Trim the whitespace of pretty-printed XML.
  const auto b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  return v;
}

std::string lower(std::string_view v) {
  std::string s(v);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The boundary parameter of a multipart Content-Type, unquoted.
std::string boundary_of(std::string_view content_type) {
  const auto l = lower(content_type);
  const auto at = l.find("boundary=");
  if (at == std::string::npos) return {};
  auto v = content_type.substr(at + 9);
  v = v.substr(0, v.find(';'));
  v = trim(v);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return std::string(v);
}

// The media type of a body part's Content-Type header, lower case; empty when it has none.
std::string part_type(std::string_view headers) {
  std::size_t pos = 0;
  while (pos <= headers.size()) {
    auto end = headers.find('\n', pos);
    if (end == std::string_view::npos) end = headers.size();
    const auto line = headers.substr(pos, end - pos);
    pos = end + 1;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const auto name = lower(trim(line.substr(0, colon)));
    if (name == "content-type" || name == "c") {
      const auto value = line.substr(colon + 1);
      return lower(trim(value.substr(0, value.find(';'))));
    }
  }
  return {};
}

}  // namespace

result<invite_body> split_invite_body(std::string_view content_type, std::string_view body) {
  invite_body out;
  const auto type = lower(trim(content_type.substr(0, content_type.find(';'))));
  if (type == "application/sdp") {
    out.sdp = std::string(body);
    return out;
  }
  if (type != "multipart/mixed")
    return fail(errc::unsupported, "body: content type " + type + " (application/sdp or multipart/mixed)");
  if (body.size() > max_body_bytes) return fail(errc::limit_exceeded, "body: multipart body over 256 KiB");
  const auto boundary = boundary_of(content_type);
  if (boundary.empty() || boundary.size() > max_boundary)
    return fail(errc::corrupt, "body: multipart/mixed without a usable boundary parameter");
  // RFC 2046 5.1.1: parts sit between "--boundary" lines; the last one is "--boundary--".
  const std::string delimiter = "--" + boundary;
  std::size_t pos = body.rfind(delimiter, 0) == 0 ? 0 : body.find("\n" + delimiter);
  if (pos == std::string_view::npos) return fail(errc::corrupt, "body: the boundary never occurs in the body");
  if (pos != 0) ++pos;
  bool closed = false;
  for (std::size_t parts = 0; parts < max_parts; ++parts) {
    pos += delimiter.size();
    if (body.substr(pos, 2) == "--") {
      closed = true;
      break;
    }
    const auto line_end = body.find('\n', pos);
    if (line_end == std::string_view::npos) break;
    const auto part_start = line_end + 1;
    auto next = body.find("\n" + delimiter, part_start);
    if (next == std::string_view::npos) break;
    // The CRLF before the next delimiter belongs to it (RFC 2046 5.1.1).
    auto part_end = next;
    if (part_end > part_start && body[part_end - 1] == '\r') --part_end;
    const auto part = body.substr(part_start, part_end - part_start);
    auto headers_end = part.find("\r\n\r\n");
    std::size_t skip = 4;
    if (headers_end == std::string_view::npos) {
      headers_end = part.find("\n\n");
      skip = 2;
    }
    if (headers_end != std::string_view::npos) {
      const auto headers = part.substr(0, headers_end);
      const auto data = part.substr(headers_end + skip);
      const auto ptype = part_type(headers);
      if (ptype == "application/sdp" && out.sdp.empty()) out.sdp = std::string(data);
      else if (ptype == "application/rs-metadata+xml" && out.rs_metadata.empty()) out.rs_metadata = std::string(data);
    }
    pos = next + 1;
  }
  if (!closed) return fail(errc::corrupt, "body: the multipart body does not end with its closing boundary");
  if (out.sdp.empty()) return fail(errc::corrupt, "body: the multipart body has no application/sdp part");
  return out;
}

std::string siprec_metadata::channel_label(const std::string& sdp_label) const {
  for (const auto& [stream, label] : stream_label) {
    if (label != sdp_label) continue;
    auto s = sender.find(stream);
    if (s == sender.end()) return {};
    for (const auto& p : participants)
      if (p.id == s->second) return !p.name.empty() ? p.name : !p.aor.empty() ? p.aor : p.id;
    return s->second;
  }
  return {};
}

nlohmann::json siprec_metadata::to_json() const {
  nlohmann::json ps = nlohmann::json::array();
  for (const auto& p : participants) ps.push_back({{"id", p.id}, {"name", p.name}, {"aor", p.aor}});
  nlohmann::json ss = nlohmann::json::array();
  for (const auto& [id, label] : stream_label) {
    auto s = sender.find(id);
    ss.push_back({{"id", id}, {"label", label}, {"sender", s == sender.end() ? "" : s->second}});
  }
  return {{"participants", ps}, {"streams", ss}};
}

result<siprec_metadata> parse_rs_metadata(std::string_view xml) {
  if (xml.size() > max_metadata_bytes) return fail(errc::limit_exceeded, "rs-metadata: over 64 KiB");
  // No network, no entity substitution (the default), no DTD: a hostile document cannot make
  // libxml2 fetch or expand anything.
  const int options = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING;
  std::unique_ptr<xmlDoc, doc_deleter> doc(
      xmlReadMemory(xml.data(), static_cast<int>(xml.size()), "rs-metadata.xml", nullptr, options));
  if (!doc) return fail(errc::corrupt, "rs-metadata: not well-formed XML");
  const xmlNode* root = xmlDocGetRootElement(doc.get());
  if (!root || !named(root, "recording")) return fail(errc::corrupt, "rs-metadata: the root is not <recording>");
  siprec_metadata m;
  for (const xmlNode* n = root->children; n; n = n->next) {
    if (named(n, "participant")) {
      siprec_participant p;
      p.id = attr(n, "participant_id");
      for (const xmlNode* k = n->children; k; k = k->next)
        if (named(k, "nameID")) {
          p.aor = attr(k, "aor");
          for (const xmlNode* q = k->children; q; q = q->next)
            if (named(q, "name")) p.name = text_of(q);
        }
      if (!p.id.empty()) m.participants.push_back(std::move(p));
    } else if (named(n, "stream")) {
      const auto id = attr(n, "stream_id");
      for (const xmlNode* k = n->children; k; k = k->next)
        if (named(k, "label") && !id.empty()) m.stream_label[id] = text_of(k);
    } else if (named(n, "participantstreamassoc")) {
      const auto pid = attr(n, "participant_id");
      for (const xmlNode* k = n->children; k; k = k->next)
        if (named(k, "send") && !pid.empty()) m.sender[text_of(k)] = pid;
    }
  }
  return m;
}

}  // namespace sluice::net::sip
