// RTSP client authentication (net/rtsp/rtsp_auth): credentials out of a pull URL, the server's
// challenge, and the Authorization answer, checked against the worked examples of RFC 2617 3.5,
// RFC 7616 3.9.1 and RFC 7617 2.
#include <doctest/doctest.h>

#include "net/rtsp/rtsp_auth.hpp"

using namespace sluice::net::rtsp;

TEST_SUITE("rtsp auth") {
  TEST_CASE("a pull URL's credentials are split off: the wire URL and the logged URL carry no password") {
    auto c = split_credentials("rtsp://cam%40site:p%3Ass@10.0.0.5:554/Streaming/101?x=1");
    CHECK(c.user == "cam@site");
    CHECK(c.password == "p:ss");
    CHECK(c.has_credentials());
    CHECK(c.wire == "rtsp://10.0.0.5:554/Streaming/101?x=1");
    CHECK(c.redacted == "rtsp://cam%40site:***@10.0.0.5:554/Streaming/101?x=1");
    CHECK(c.redacted.find("p%3Ass") == std::string::npos);

    auto none = split_credentials("rtsp://10.0.0.5/a@b");  // an '@' in the path is not user information
    CHECK_FALSE(none.has_credentials());
    CHECK(none.wire == "rtsp://10.0.0.5/a@b");

    auto user_only = split_credentials("rtsp://viewer@[::1]:8554/s");
    CHECK(user_only.user == "viewer");
    CHECK(user_only.password.empty());
    CHECK(user_only.wire == "rtsp://[::1]:8554/s");
  }

  TEST_CASE("RFC 2617's Digest example with qop=auth gives its response 6629fae49393a05397450978507c4ef1") {
    const header_list h{{"WWW-Authenticate",
                         "Digest realm=\"testrealm@host.com\", qop=\"auth,auth-int\", "
                         "nonce=\"dcd98b7102dd2f0e8b11d0f600bfb0c093\", opaque=\"5ccc069c403ebaf9f0171e9517f40e41\""}};
    const auto c = parse_challenge(h);
    REQUIRE(c.scheme == auth_scheme::digest);
    CHECK(c.realm == "testrealm@host.com");
    CHECK(c.qop_auth);
    CHECK(c.opaque == "5ccc069c403ebaf9f0171e9517f40e41");
    const auto a = authorization(c, "Mufasa", "Circle Of Life", "GET", "/dir/index.html", 1, "0a4f113b");
    CHECK(a.rfind("Digest ", 0) == 0);
    CHECK(a.find("response=\"6629fae49393a05397450978507c4ef1\"") != std::string::npos);
    CHECK(a.find("nc=00000001") != std::string::npos);
    CHECK(a.find("cnonce=\"0a4f113b\"") != std::string::npos);
    CHECK(a.find("opaque=\"5ccc069c403ebaf9f0171e9517f40e41\"") != std::string::npos);
    CHECK(a.find("uri=\"/dir/index.html\"") != std::string::npos);
  }

  TEST_CASE("RFC 7616's MD5 example gives its response 8ca523f5e9506fed4657c9700eebdbec") {
    // The RFC offers SHA-256 first and MD5 second; sluice answers the MD5 one.
    const header_list h{
        {"WWW-Authenticate", "Digest realm=\"http-auth@example.org\", qop=\"auth, auth-int\", algorithm=SHA-256, "
                             "nonce=\"7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v\", "
                             "opaque=\"FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS\""},
        {"WWW-Authenticate", "Digest realm=\"http-auth@example.org\", qop=\"auth, auth-int\", algorithm=MD5, "
                             "nonce=\"7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v\", "
                             "opaque=\"FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS\""}};
    const auto c = parse_challenge(h);
    REQUIRE(c.scheme == auth_scheme::digest);
    const auto a = authorization(c, "Mufasa", "Circle of Life", "GET", "/dir/index.html", 1,
                                 "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ");
    CHECK(a.find("response=\"8ca523f5e9506fed4657c9700eebdbec\"") != std::string::npos);
  }

  TEST_CASE("Digest without qop (RFC 2069 style, what many cameras send) hashes HA1:nonce:HA2") {
    const header_list h{{"WWW-Authenticate", "Digest realm=\"IP Camera\", nonce=\"abc123\""}};
    const auto c = parse_challenge(h);
    REQUIRE(c.scheme == auth_scheme::digest);
    CHECK_FALSE(c.qop_auth);
    const auto a = authorization(c, "admin", "secret", "DESCRIBE", "rtsp://10.0.0.5/s", 1, "ignored");
    const auto ha1 = md5_hex("admin:IP Camera:secret"), ha2 = md5_hex("DESCRIBE:rtsp://10.0.0.5/s");
    CHECK(a.find("response=\"" + md5_hex(ha1 + ":abc123:" + ha2) + "\"") != std::string::npos);
    CHECK(a.find("qop") == std::string::npos);
    CHECK(a.find("cnonce") == std::string::npos);
    // md5_hex itself, against RFC 1321's test suite.
    CHECK(md5_hex("") == "d41d8cd98f00b204e9800998ecf8427e");
    CHECK(md5_hex("abc") == "900150983cd24fb0d6963f7d28e17f72");
  }

  TEST_CASE("Basic is answered as RFC 7617 says, and Digest is preferred when both are offered") {
    const header_list basic{{"WWW-Authenticate", "Basic realm=\"WallyWorld\""}};
    const auto b = parse_challenge(basic);
    REQUIRE(b.scheme == auth_scheme::basic);
    CHECK(authorization(b, "Aladdin", "open sesame", "DESCRIBE", "rtsp://h/s") == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
    const header_list both{{"WWW-Authenticate", "Basic realm=\"r\""}, {"www-authenticate", "Digest realm=\"r\", nonce=\"n\""}};
    CHECK(parse_challenge(both).scheme == auth_scheme::digest);
  }

  TEST_CASE("the server reads Basic credentials as RFC 7617 writes them, and nothing else") {
    auto c = basic_credentials("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
    REQUIRE(c);
    CHECK(c->first == "Aladdin");
    CHECK(c->second == "open sesame");
    auto colon_in_password = basic_credentials("basic dTpwOnE=");  // "u:p:q": the first ':' splits
    REQUIRE(colon_in_password);
    CHECK(colon_in_password->first == "u");
    CHECK(colon_in_password->second == "p:q");
    auto key_only = basic_credentials("Basic a2V5Og==");  // "key:"
    REQUIRE(key_only);
    CHECK(key_only->first == "key");
    CHECK(key_only->second.empty());
    CHECK_FALSE(basic_credentials("Bearer QWxhZGRpbjpvcGVuIHNlc2FtZQ=="));
    CHECK_FALSE(basic_credentials("Basic bm9jb2xvbg=="));    // "nocolon"
    CHECK_FALSE(basic_credentials("Basic QWxh*GRpbjpv"));     // not base64
    CHECK_FALSE(basic_credentials("Basic QWxhZGRpbjpvcGV"));  // 15 characters: not base64's groups of 4
    CHECK_FALSE(basic_credentials("Basic "));
    CHECK_FALSE(basic_credentials("Basic " + std::string(8000, 'A')));
  }

  TEST_CASE("challenges sluice cannot answer or cannot read give no scheme, and stale is seen") {
    CHECK(parse_challenge({}).scheme == auth_scheme::none);
    CHECK(parse_challenge({{"WWW-Authenticate", "Digest realm=\"r\", nonce=\"n\", algorithm=SHA-256"}}).scheme ==
          auth_scheme::none);
    CHECK(parse_challenge({{"WWW-Authenticate", "Digest realm=\"r\", nonce=\"n\", qop=\"auth-int\""}}).scheme ==
          auth_scheme::none);
    CHECK(parse_challenge({{"WWW-Authenticate", "Digest realm=\"r\""}}).scheme == auth_scheme::none);  // no nonce
    CHECK(parse_challenge({{"WWW-Authenticate", "Digest realm=\"unterminated, nonce=\"n\""}}).scheme == auth_scheme::none);
    CHECK(parse_challenge({{"WWW-Authenticate", "Negotiate"}}).scheme == auth_scheme::none);
    CHECK(parse_challenge({{"WWW-Authenticate", "Digest realm=" + std::string(5000, 'a') + ", nonce=n"}}).scheme ==
          auth_scheme::none);
    const auto s = parse_challenge({{"WWW-Authenticate", "Digest realm=\"r\", nonce=\"n2\", stale=TRUE"}});
    CHECK(s.scheme == auth_scheme::digest);
    CHECK(s.stale);
    // Quoted values with escapes, and quotes in the user name escaped in the answer.
    const auto q = parse_challenge({{"WWW-Authenticate", "Digest realm=\"a \\\"b\\\"\", nonce=\"n\""}});
    CHECK(q.realm == "a \"b\"");
    CHECK(authorization(q, "u\"x", "p", "OPTIONS", "*").find("username=\"u\\\"x\"") != std::string::npos);
  }
}
