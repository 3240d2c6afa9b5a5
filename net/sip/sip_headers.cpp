#include "net/sip/sip_headers.hpp"

namespace sluice::net::sip {

std::string content_type_of(const sip_t* sip) {
  if (!sip || !sip->sip_content_type || !sip->sip_content_type->c_type) return "application/sdp";
  std::string ct = sip->sip_content_type->c_type;
  if (sip->sip_content_type->c_params)
    for (auto* p = sip->sip_content_type->c_params; *p; ++p) ct += std::string(";") + *p;
  return ct;
}

std::string warning_of(const std::string& text) {
  std::string safe;
  for (char ch : text) safe += (ch == '"' || ch == '\\' || ch == '\r' || ch == '\n') ? ' ' : ch;
  return "399 sluice \"" + safe + "\"";
}

std::string address_of(const sip_addr_s* a) {
  if (!a) return {};
  std::string s;
  if (a->a_url->url_user) s = std::string(a->a_url->url_user) + "@";
  if (a->a_url->url_host) s += a->a_url->url_host;
  return s;
}

}  // namespace sluice::net::sip
