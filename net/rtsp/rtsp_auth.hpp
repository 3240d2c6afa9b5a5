#pragma once
/// RTSP client authentication for pulls (RFC 2326 uses HTTP's): the credentials of an
/// rtsp://user:password@host/path URL, the server's challenge (`WWW-Authenticate: Digest ...` or
/// `Basic ...`, RFC 2617 / RFC 7616 with MD5, the algorithm RTSP cameras and servers use) and the
/// `Authorization` value answering it. Pure functions over untrusted text; the password never
/// appears in what is logged (`redacted`) or in the URL sent on the wire (`wire`).

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "net/rtsp/rtsp_message.hpp"

namespace sluice::net::rtsp {

/// An rtsp:// URL split into what goes on the wire and the credentials it carried.
struct url_credentials {
  std::string wire;      ///< the URL without user information (sent in requests)
  std::string redacted;  ///< for logs: the URL with the password replaced by "***"
  std::string user, password;  ///< percent-decoded; empty when the URL has none
  bool has_credentials() const { return !user.empty() || !password.empty(); }
};

/// Splits `url` (rtsp://[user[:password]@]host[:port][/path]).
url_credentials split_credentials(std::string_view url);

enum class auth_scheme { none, basic, digest };

/// What a 401's WWW-Authenticate headers ask for; Digest is preferred when both are offered.
struct auth_challenge {
  auth_scheme scheme = auth_scheme::none;
  std::string realm, nonce, opaque;
  bool qop_auth = false;  ///< the server offered qop="auth" (then nc and cnonce are sent)
  bool stale = false;     ///< the nonce expired: retry with the new one, the credentials were right
};

/// The challenge in a 401's headers: the strongest scheme offered that sluice can answer (Digest
/// with MD5, else Basic); scheme none when there is none (e.g. Digest with SHA-256 only).
auth_challenge parse_challenge(const header_list& headers);

/// The Authorization header value answering `c` for one request (`method` and `uri` as in its
/// request line). For qop=auth, `nc` counts the requests made with this nonce and `cnonce` is
/// the client's nonce.
std::string authorization(const auth_challenge& c, const std::string& user, const std::string& password,
                          const std::string& method, const std::string& uri, unsigned nc = 1,
                          const std::string& cnonce = {});

/// The user and password of an `Authorization: Basic <base64(user:password)>` value (RFC 7617),
/// or nullopt when it is not one (another scheme, bad base64, no ':').
std::optional<std::pair<std::string, std::string>> basic_credentials(std::string_view authorization);

/// Lower-case hex MD5 of `text` (RFC 1321), as Digest authentication uses it.
std::string md5_hex(std::string_view text);

}  // namespace sluice::net::rtsp
