// SIPREC INVITE bodies as RFC 7866/7865 show them: the multipart split, the participants and
// which stream each one sends, and the channel labels that follow; malformed bodies and XML are
// errors, and XML cannot make the parser fetch or expand anything.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "net/sip/siprec_metadata.hpp"

using namespace sluice;
using namespace sluice::net::sip;

namespace {
const std::string sdp =
    "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
    "m=audio 6000 RTP/AVP 0\r\na=label:1\r\na=sendonly\r\nm=audio 6002 RTP/AVP 0\r\na=label:2\r\na=sendonly\r\n";
// After RFC 7865 section 10's example: Alice sends stream 1, Bob stream 2.
const std::string metadata = R"(<?xml version="1.0" encoding="UTF-8"?>
<recording xmlns="urn:ietf:params:xml:ns:recording:1">
  <datamode>complete</datamode>
  <session session_id="hVpd7YQgRW2nD22h7q60JQ=="><sipSessionID>ab30317f1a784dc48ff824d0d3715d86</sipSessionID></session>
  <participant participant_id="srfBElmCRp2QB23b7Mpk0w==">
    <nameID aor="sip:alice@atlanta.com"><name xml:lang="it">Alice</name></nameID>
  </participant>
  <participant participant_id="zSfPoSvdSDCmU3A3TRDxAw==">
    <nameID aor="sip:bob@biloxy.com"/>
  </participant>
  <stream stream_id="UAAMm5GRQKSCMVvLyl4rFw==" session_id="hVpd7YQgRW2nD22h7q60JQ=="><label>1</label></stream>
  <stream stream_id="i1Pz3to5hGk8fuXl+PbwCw==" session_id="hVpd7YQgRW2nD22h7q60JQ=="><label>2</label></stream>
  <participantstreamassoc participant_id="srfBElmCRp2QB23b7Mpk0w==">
    <send>UAAMm5GRQKSCMVvLyl4rFw==</send><recv>i1Pz3to5hGk8fuXl+PbwCw==</recv>
  </participantstreamassoc>
  <participantstreamassoc participant_id="zSfPoSvdSDCmU3A3TRDxAw==">
    <send>i1Pz3to5hGk8fuXl+PbwCw==</send><recv>UAAMm5GRQKSCMVvLyl4rFw==</recv>
  </participantstreamassoc>
</recording>
)";
std::string multipart(const std::string& boundary) {
  return "--" + boundary + "\r\nContent-Type: application/sdp\r\n\r\n" + sdp + "--" + boundary +
         "\r\nContent-Type: application/rs-metadata+xml\r\nContent-Disposition: recording-session\r\n\r\n" + metadata +
         "\r\n--" + boundary + "--\r\n";
}
}  // namespace

TEST_SUITE("sip siprec metadata") {
  TEST_CASE("a SIPREC multipart body splits into its SDP and its metadata") {
    auto b = split_invite_body("multipart/mixed;boundary=foobar", multipart("foobar"));
    REQUIRE_MESSAGE(b.has_value(), (b ? std::string() : b.error().message));
    CHECK(b->sdp.find("m=audio 6002 RTP/AVP 0") != std::string::npos);
    CHECK(b->rs_metadata.find("<recording") != std::string::npos);
    auto plain = split_invite_body("application/sdp", sdp);
    REQUIRE(plain.has_value());
    CHECK(plain->sdp == sdp);
    CHECK(plain->rs_metadata.empty());
  }

  TEST_CASE("participants name the streams they send: name, else AOR") {
    auto m = parse_rs_metadata(metadata);
    REQUIRE_MESSAGE(m.has_value(), (m ? std::string() : m.error().message));
    REQUIRE(m->participants.size() == 2);
    CHECK(m->participants[0].name == "Alice");
    CHECK(m->participants[1].aor == "sip:bob@biloxy.com");
    CHECK(m->channel_label("1") == "Alice");
    CHECK(m->channel_label("2") == "sip:bob@biloxy.com");
    CHECK(m->channel_label("3").empty());
    const auto j = m->to_json();
    CHECK(j["participants"].size() == 2);
    CHECK(j["streams"].size() == 2);
  }

  TEST_CASE("malformed bodies and metadata are errors that say why") {
    CHECK(split_invite_body("application/xml", "<x/>").error().code == errc::unsupported);
    CHECK(split_invite_body("multipart/mixed;boundary=nope", multipart("foobar")).error().code == errc::corrupt);
    const std::string no_sdp = "--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n--b--\r\n";
    CHECK(split_invite_body("multipart/mixed;boundary=b", no_sdp).error().code == errc::corrupt);
    CHECK(parse_rs_metadata("<recording><participant").error().code == errc::corrupt);
    CHECK(parse_rs_metadata("<other/>").error().code == errc::corrupt);
    CHECK(parse_rs_metadata(std::string(70000, ' ')).error().code == errc::limit_exceeded);
  }

  TEST_CASE("an external entity is neither fetched nor expanded") {
    const std::string xxe = R"(<?xml version="1.0"?>
<!DOCTYPE recording [<!ENTITY secret SYSTEM "file:///etc/hostname">]>
<recording><participant participant_id="p"><nameID aor="a"><name>&secret;</name></nameID></participant></recording>)";
    auto m = parse_rs_metadata(xxe);
    if (m) {
      REQUIRE(m->participants.size() == 1);
      CHECK(m->participants[0].name.empty());  // the entity stays unexpanded
    } else {
      CHECK(m.error().code == errc::corrupt);
    }
  }

  TEST_CASE("a body on which sofia-sip's multipart parser aborts the process is split without it") {
    // Found by tests/fuzz/siprec_body_fuzz.cpp when the split was sofia's msg_multipart_parse (an
    // assertion failure, so a hostile recorder could have ended the server). Its first byte picks
    // the boundary as the fuzz target does: 2 -> "bxx".
    std::ifstream in(SLUICE_SOURCE_DIR "/tests/fuzz/corpus/siprec_body/sofia_multipart_abort.bin", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(bytes.size() > 1);
    REQUIRE(bytes[0] == 2);
    auto b = split_invite_body("multipart/mixed;boundary=bxx", std::string_view(bytes).substr(1));
    if (b) CHECK_FALSE(b->sdp.empty());
    else CHECK_FALSE(b.error().message.empty());
  }
}
