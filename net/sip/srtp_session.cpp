#include "net/sip/srtp_session.hpp"

#include <limits>
#include <mutex>

#include <srtp2/srtp.h>

namespace sluice::net::sip {

namespace {

// RFC 3711 3.3.2: the replay list "SHOULD" hold at least 64; 1024 tolerates the reordering of a
// jittery trunk without taking a copy twice.
constexpr unsigned long replay_window = 1024;

// libsrtp's crypto kernel is set up once per process.
result<void> init_once() {
  static std::once_flag once;
  static srtp_err_status_t status = srtp_err_status_ok;
  std::call_once(once, [] { status = srtp_init(); });
  if (status != srtp_err_status_ok)
    return fail(errc::internal, "srtp: libsrtp did not start (error " + std::to_string(static_cast<int>(status)) + ")");
  return {};
}

// RFC 4568 6.2.1 / RFC 6188: the _32 suites shorten the SRTP tag only; SRTCP keeps 80 bits.
void set_policy(srtp_suite s, srtp_policy_t& p) {
  switch (s) {
    case srtp_suite::aes_cm_128_hmac_sha1_80:
      srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&p.rtp);
      srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&p.rtcp);
      break;
    case srtp_suite::aes_cm_128_hmac_sha1_32:
      srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32(&p.rtp);
      srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&p.rtcp);
      break;
    case srtp_suite::aes_256_cm_hmac_sha1_80:
      srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80(&p.rtp);
      srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80(&p.rtcp);
      break;
    case srtp_suite::aes_256_cm_hmac_sha1_32:
      srtp_crypto_policy_set_aes_cm_256_hmac_sha1_32(&p.rtp);
      srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80(&p.rtcp);
      break;
    case srtp_suite::aead_aes_128_gcm:  // RFC 7714: a 16-octet tag for both
      srtp_crypto_policy_set_aes_gcm_128_16_auth(&p.rtp);
      srtp_crypto_policy_set_aes_gcm_128_16_auth(&p.rtcp);
      break;
    case srtp_suite::aead_aes_256_gcm:
      srtp_crypto_policy_set_aes_gcm_256_16_auth(&p.rtp);
      srtp_crypto_policy_set_aes_gcm_256_16_auth(&p.rtcp);
      break;
  }
}

srtp_check check_of(srtp_err_status_t e) {
  switch (e) {
    case srtp_err_status_ok: return srtp_check::ok;
    case srtp_err_status_auth_fail: return srtp_check::auth_failed;
    case srtp_err_status_replay_fail:
    case srtp_err_status_replay_old: return srtp_check::replayed;
    default: return srtp_check::malformed;
  }
}

// RFC 3550 5.1 / 6.4.1: the RTP header is 12 bytes, an RTCP packet's first 8.
constexpr std::size_t min_rtp = 12, min_rtcp = 8;

// libsrtp's four calls share one shape: (session, packet, in/out length).
using srtp_call = srtp_err_status_t (*)(srtp_t, void*, int*);

srtp_check unprotect_with(srtp_call call, void* ctx, std::size_t min, uint8_t* packet, std::size_t& size) {
  if (size < min || size > static_cast<std::size_t>(std::numeric_limits<int>::max())) return srtp_check::malformed;
  int len = static_cast<int>(size);
  const auto r = check_of(call(static_cast<srtp_t>(ctx), packet, &len));
  if (r == srtp_check::ok) size = static_cast<std::size_t>(len);
  return r;
}

// libsrtp writes the trailer after the packet: `trailer` bytes of room are made first.
bool protect_with(srtp_call call, void* ctx, std::size_t min, std::size_t trailer, std::vector<uint8_t>& packet) {
  if (packet.size() < min) return false;
  const auto n = packet.size();
  packet.resize(n + trailer);
  int len = static_cast<int>(n);
  if (call(static_cast<srtp_t>(ctx), packet.data(), &len) != srtp_err_status_ok) {
    packet.resize(n);
    return false;
  }
  packet.resize(static_cast<std::size_t>(len));
  return true;
}

}  // namespace

result<std::unique_ptr<srtp_session>> srtp_session::make(const sdes_crypto& key, direction dir) {
  if (key.key.size() != suite_key_bytes(key.suite))
    return fail(errc::invalid_argument, std::string("srtp: ") + suite_name(key.suite) + " wants a " +
                                            std::to_string(suite_key_bytes(key.suite)) + "-byte key and salt");
  if (auto ok = init_once(); !ok) return tl::unexpected(ok.error());
  srtp_policy_t p{};
  set_policy(key.suite, p);
  p.ssrc.type = dir == direction::inbound ? ssrc_any_inbound : ssrc_any_outbound;
  // libsrtp reads the key (it does not keep the pointer past srtp_create).
  std::vector<uint8_t> k = key.key;
  p.key = k.data();
  p.window_size = replay_window;
  p.allow_repeat_tx = 0;
  p.next = nullptr;
  srtp_t ctx = nullptr;
  const auto st = srtp_create(&ctx, &p);
  std::fill(k.begin(), k.end(), uint8_t{0});
  if (st != srtp_err_status_ok)
    return fail(errc::internal, std::string("srtp: libsrtp refused ") + suite_name(key.suite) + " (error " +
                                    std::to_string(static_cast<int>(st)) + ")");
  return std::unique_ptr<srtp_session>(new srtp_session(ctx, key.suite));
}

srtp_session::~srtp_session() {
  if (ctx_) srtp_dealloc(static_cast<srtp_t>(ctx_));
}

srtp_check srtp_session::unprotect_rtp(uint8_t* packet, std::size_t& size) {
  return unprotect_with(srtp_unprotect, ctx_, min_rtp, packet, size);
}

srtp_check srtp_session::unprotect_rtcp(uint8_t* packet, std::size_t& size) {
  return unprotect_with(srtp_unprotect_rtcp, ctx_, min_rtcp, packet, size);
}

// The SRTCP trailer adds the E flag and index (4 bytes) before the tag.
bool srtp_session::protect_rtcp(std::vector<uint8_t>& packet) {
  return protect_with(srtp_protect_rtcp, ctx_, min_rtcp, SRTP_MAX_TRAILER_LEN + 4, packet);
}

bool srtp_session::protect_rtp(std::vector<uint8_t>& packet) {
  return protect_with(srtp_protect, ctx_, min_rtp, SRTP_MAX_TRAILER_LEN, packet);
}

}  // namespace sluice::net::sip
