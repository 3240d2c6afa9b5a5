#pragma once
/// One direction of an SRTP stream (RFC 3711) with an SDES master key (sdp_offer.hpp): libsrtp2
/// does the cryptography. A session is used from one strand only (libsrtp's contexts are not
/// thread-safe); sessions of different streams are independent.
///
/// Inbound: SRTP and SRTCP from the peer, authenticated and decrypted in place, with replay
/// protection (a window of 1024 packets: a copy of a packet already taken, or one too old, is
/// refused). Outbound: our SRTCP receiver reports (sluice sends no RTP).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "config/error.hpp"
#include "net/sip/sdp_offer.hpp"

namespace sluice::net::sip {

enum class srtp_check {
  ok,          ///< authentic and new: decrypted in place
  auth_failed, ///< the tag does not match (another key, a forged or damaged packet)
  replayed,    ///< a packet index already taken, or older than the replay window
  malformed,   ///< too short to be SRTP/SRTCP, or another libsrtp error
};

class srtp_session {
 public:
  enum class direction { inbound, outbound };
  /// errc::invalid_argument: a key of the wrong length for its suite; errc::internal: libsrtp
  /// refused the policy (a suite its build lacks).
  static result<std::unique_ptr<srtp_session>> make(const sdes_crypto& key, direction dir);
  ~srtp_session();
  srtp_session(const srtp_session&) = delete;
  srtp_session& operator=(const srtp_session&) = delete;

  /// Inbound only: checks and decrypts `packet` in place; `size` becomes the plain packet's.
  srtp_check unprotect_rtp(uint8_t* packet, std::size_t& size);
  srtp_check unprotect_rtcp(uint8_t* packet, std::size_t& size);
  /// Outbound only: encrypts and authenticates `packet` (grows by the SRTCP index and tag, or the
  /// SRTP tag). False when libsrtp refuses it.
  bool protect_rtcp(std::vector<uint8_t>& packet);
  bool protect_rtp(std::vector<uint8_t>& packet);

  srtp_suite suite() const { return suite_; }

 private:
  srtp_session(void* ctx, srtp_suite suite) : ctx_(ctx), suite_(suite) {}
  void* ctx_;  // srtp_t
  srtp_suite suite_;
};

}  // namespace sluice::net::sip
