#pragma once
/// SIPREC (RFC 7866) INVITE bodies: the multipart/mixed body split into its SDP offer and its
/// recording metadata (RFC 7865, application/rs-metadata+xml), and the metadata's participants and
/// streams, so that each recorded stream's channel is labelled by the participant who sends it.
/// The XML is libxml2's (no network, no entity expansion, no DTD loading). The multipart split is
/// ours (RFC 2046 5.1.1, a few lines): sofia-sip 1.12.11's msg_multipart_parse aborts the process
/// on an assertion for some bodies (found by tests/fuzz/siprec_body_fuzz.cpp), which a hostile
/// recorder could send. Pure functions over untrusted text; errors are values naming the problem.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/error.hpp"

namespace sluice::net::sip {

/// The parts of an INVITE body that sluice reads.
struct invite_body {
  std::string sdp;          ///< the application/sdp part (or the whole body when not multipart)
  std::string rs_metadata;  ///< the application/rs-metadata+xml part; empty when absent
};

/// Splits a body of `content_type` ("application/sdp", or "multipart/mixed;boundary=...").
/// errc::corrupt: a multipart body that does not parse or has no SDP part; errc::unsupported:
/// another content type.
result<invite_body> split_invite_body(std::string_view content_type, std::string_view body);

struct siprec_participant {
  std::string id;    ///< participant_id
  std::string name;  ///< <name>, may be empty
  std::string aor;   ///< nameID aor, may be empty
};

struct siprec_metadata {
  std::vector<siprec_participant> participants;
  std::map<std::string, std::string> stream_label;  ///< stream_id -> its SDP a=label
  std::map<std::string, std::string> sender;        ///< stream_id -> participant_id who sends it

  /// The channel label of the SDP stream labelled `sdp_label`: its sender's name, else its AOR,
  /// else its participant id; empty when the metadata does not say.
  std::string channel_label(const std::string& sdp_label) const;
  /// Participants and streams as JSON for the call's metadata.
  nlohmann::json to_json() const;
};

/// Parses RFC 7865 metadata (elements matched by local name, any namespace). errc::corrupt: not
/// well-formed XML or no <recording> root; errc::limit_exceeded: over 64 KiB.
result<siprec_metadata> parse_rs_metadata(std::string_view xml);

}  // namespace sluice::net::sip
