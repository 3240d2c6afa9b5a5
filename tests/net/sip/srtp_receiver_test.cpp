// An RTP receiver with SRTP (net/sip/srtp_session, libsrtp2) fed over loopback UDP: only
// authentic packets are heard and latch the peer; packets under another key, plain RTP and
// replayed copies are dropped and counted, and the audio decrypts to the very samples sent.
// Interoperability with another SRTP implementation (baresip's, from libre) is in
// baresip_call_test.cpp; this file checks the receiver's handling of what fails.
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "net/sip/port_pool.hpp"
#include "net/sip/rtp_receiver.hpp"
#include "net/sip/srtp_session.hpp"
#include "tests/common/free_ports.hpp"
#include "tests/common/poll_until.hpp"

using namespace sluice;
using namespace sluice::net::sip;
namespace asio = boost::asio;

namespace {
constexpr std::size_t samples_per_packet = 160;  // 20 ms of PCMU
// G.711 mu-law code 0x80 is the largest positive sample, +32124 (ITU-T G.711 table 2a).
constexpr uint8_t mulaw_max_code = 0x80;
constexpr int16_t mulaw_max_linear = 32124;

std::vector<uint8_t> pcmu_packet(uint16_t seq, uint32_t ssrc) {
  std::vector<uint8_t> p(12 + samples_per_packet, mulaw_max_code);
  const uint32_t ts = seq * static_cast<uint32_t>(samples_per_packet);
  p[0] = 0x80;  // V=2
  p[1] = 0;     // PCMU
  p[2] = static_cast<uint8_t>(seq >> 8);
  p[3] = static_cast<uint8_t>(seq);
  for (int i = 0; i < 4; ++i) p[4 + i] = static_cast<uint8_t>(ts >> (24 - 8 * i));
  for (int i = 0; i < 4; ++i) p[8 + i] = static_cast<uint8_t>(ssrc >> (24 - 8 * i));
  return p;
}

sdes_crypto key_of(uint8_t first) {
  sdes_crypto c;
  c.tag = 1;
  c.suite = srtp_suite::aes_cm_128_hmac_sha1_80;
  for (int i = 0; i < 30; ++i) c.key.push_back(static_cast<uint8_t>(first + i));
  return c;
}

// What the receiver's sinks heard, with a signal when enough has come.
struct heard {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int16_t> samples;
  void add(const std::vector<uint8_t>& pcm) {
    std::lock_guard lock(mu);
    for (std::size_t i = 0; i + 1 < pcm.size(); i += 2)
      samples.push_back(static_cast<int16_t>(pcm[i] | (pcm[i + 1] << 8)));
    cv.notify_all();
  }
  bool wait_for(std::size_t n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return samples.size() >= n; });
  }
};
// A started SRTP receiver on a loopback port (its I/O on a thread of its own) that takes the
// peer's packets under `peer_key`, what its sinks hear, and the address to send to.
struct srtp_rig {
  asio::io_context ioc;
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(ioc);
  std::thread io;  // started last: a failed REQUIRE above it leaves no thread running
  std::shared_ptr<rtp_receiver> receiver;
  heard h;
  asio::ip::udp::endpoint to;

  explicit srtp_rig(const sdes_crypto& peer_key) {
    const int base = test::free_rtp_base(4);
    auto r = rtp_receiver::open(ioc, "127.0.0.1", std::make_shared<port_pool>(base, base + 3), {}, codec_choice{}, -1, {});
    REQUIRE(r.has_value());
    receiver = *r;
    rtp_sinks sinks;
    sinks.audio = [this](std::vector<uint8_t> pcm) { h.add(pcm); };
    receiver->set_sinks(sinks);
    auto in = srtp_session::make(peer_key, srtp_session::direction::inbound);
    auto out = srtp_session::make(key_of(201), srtp_session::direction::outbound);
    REQUIRE(in.has_value());
    REQUIRE(out.has_value());
    receiver->set_srtp(std::move(*in), std::move(*out));
    receiver->start();
    to = asio::ip::udp::endpoint(asio::ip::make_address("127.0.0.1"), receiver->port());
    io = std::thread([this] { ioc.run(); });
  }
  ~srtp_rig() {
    work.reset();
    ioc.stop();
    if (io.joinable()) io.join();
  }
  asio::ip::udp::socket sender() {
    asio::ip::udp::socket s(ioc);
    s.open(asio::ip::udp::v4());
    return s;
  }
  // Stops the receiver (it reads what its socket still queues first) and waits for the end.
  void stop() {
    std::promise<void> stopped;
    receiver->stop([&] { stopped.set_value(); });
    REQUIRE(stopped.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  }
};
}  // namespace

TEST_SUITE("sip srtp receiver") {
  TEST_CASE("only packets under the peer's key are heard: other keys, plain RTP and replays are counted and dropped") {
    const auto peer_key = key_of(1), wrong_key = key_of(101);
    srtp_rig rig(peer_key);
    auto& h = rig.h;
    const auto& to = rig.to;

    // The peer (socket b) and a stranger (socket a), each protecting with its own session.
    auto peer = srtp_session::make(peer_key, srtp_session::direction::outbound);
    auto stranger = srtp_session::make(wrong_key, srtp_session::direction::outbound);
    auto stranger_with_peer_key = srtp_session::make(peer_key, srtp_session::direction::outbound);
    REQUIRE(peer.has_value());
    REQUIRE(stranger.has_value());
    REQUIRE(stranger_with_peer_key.has_value());
    auto a = rig.sender(), b = rig.sender();

    // First the stranger: five packets under another key. They must not latch it.
    for (uint16_t seq = 1; seq <= 5; ++seq) {
      auto p = pcmu_packet(seq, 0x5555);
      REQUIRE((*stranger)->protect_rtp(p));
      a.send_to(asio::buffer(p), to);
    }
    // The peer sends one packet in the clear: not authentic either.
    const auto clear = pcmu_packet(0, 0x1234);
    b.send_to(asio::buffer(clear), to);
    // Then ten authentic packets; the fifth is kept to be sent again.
    std::vector<uint8_t> fifth;
    for (uint16_t seq = 1; seq <= 10; ++seq) {
      auto p = pcmu_packet(seq, 0x1234);
      REQUIRE((*peer)->protect_rtp(p));
      REQUIRE(p.size() == clear.size() + 10);  // the 80-bit tag
      if (seq == 5) fifth = p;
      b.send_to(asio::buffer(p), to);
    }
    // The jitter buffer may hold the newest packet until the next: nine packets are heard at
    // least. The socket queues in arrival order, so everything sent before has been read.
    REQUIRE(h.wait_for(9 * samples_per_packet));
    // A copy of a packet already taken, and an authentic packet from the stranger's address
    // (the peer is latched): both dropped.
    b.send_to(asio::buffer(fifth), to);
    auto late = pcmu_packet(11, 0x1234);
    REQUIRE((*stranger_with_peer_key)->protect_rtp(late));
    a.send_to(asio::buffer(late), to);

    rig.stop();
    const auto& k = rig.receiver->counters();
    CHECK(k.datagrams == 18);
    CHECK(k.srtp_auth_failed == 6);  // five under the wrong key, one in the clear
    CHECK(k.srtp_replayed == 1);
    CHECK(k.foreign_source == 1);
    CHECK(k.not_rtp == 0);
    {
      std::lock_guard lock(h.mu);
      // Every authentic packet, decrypted: 10 x 160 samples of mu-law 0x80, nothing else.
      CHECK(h.samples.size() == 10 * samples_per_packet);
      CHECK(std::all_of(h.samples.begin(), h.samples.end(), [](int16_t v) { return v == mulaw_max_linear; }));
    }
  }

  TEST_CASE("a re-key (the peer's new key from a re-INVITE) takes effect from the next packet read") {
    const auto first_key = key_of(1), second_key = key_of(51);
    srtp_rig rig(first_key);
    const auto& receiver = rig.receiver;
    const auto& to = rig.to;
    auto before = srtp_session::make(first_key, srtp_session::direction::outbound);
    auto after = srtp_session::make(second_key, srtp_session::direction::outbound);
    REQUIRE(before.has_value());
    REQUIRE(after.has_value());
    auto b = rig.sender();
    for (uint16_t seq = 1; seq <= 5; ++seq) {
      auto p = pcmu_packet(seq, 0x1234);
      REQUIRE((*before)->protect_rtp(p));
      b.send_to(asio::buffer(p), to);
    }
    // All five read: the fifth datagram's handler has begun (the count is its first step), so
    // the re-key posted now runs on the strand after it, and before any later datagram's
    // handler. (Audio heard is not enough: the fifth packet may still be in the socket.)
    REQUIRE(test::poll_until([&] { return receiver->counters().datagrams == 5; }, std::chrono::seconds(10)));
    receiver->rekey(*srtp_session::make(second_key, srtp_session::direction::inbound));
    for (uint16_t seq = 6; seq <= 10; ++seq) {
      auto p = pcmu_packet(seq, 0x1234);
      REQUIRE((*after)->protect_rtp(p));
      b.send_to(asio::buffer(p), to);
    }
    // A packet under the old key after the re-key: no longer authentic.
    auto old = pcmu_packet(11, 0x1234);
    REQUIRE((*before)->protect_rtp(old));
    b.send_to(asio::buffer(old), to);
    rig.stop();
    CHECK(receiver->counters().srtp_auth_failed == 1);
    std::lock_guard lock(rig.h.mu);
    CHECK(rig.h.samples.size() == 10 * samples_per_packet);
  }

  TEST_CASE("sessions: a key of the wrong length is refused, and every suite protects and checks a packet") {
    sdes_crypto bad = key_of(1);
    bad.key.pop_back();
    auto r = srtp_session::make(bad, srtp_session::direction::inbound);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("30-byte") != std::string::npos);
    for (auto suite : {srtp_suite::aes_cm_128_hmac_sha1_80, srtp_suite::aes_cm_128_hmac_sha1_32,
                       srtp_suite::aes_256_cm_hmac_sha1_80, srtp_suite::aes_256_cm_hmac_sha1_32,
                       srtp_suite::aead_aes_128_gcm, srtp_suite::aead_aes_256_gcm}) {
      CAPTURE(suite_name(suite));
      sdes_crypto k;
      k.suite = suite;
      for (std::size_t i = 0; i < suite_key_bytes(suite); ++i) k.key.push_back(static_cast<uint8_t>(7 * i));
      auto send = srtp_session::make(k, srtp_session::direction::outbound);
      auto recv = srtp_session::make(k, srtp_session::direction::inbound);
      REQUIRE_MESSAGE(send.has_value(), (send ? std::string() : send.error().message));
      REQUIRE(recv.has_value());
      const auto plain = pcmu_packet(42, 99);
      auto p = plain;
      REQUIRE((*send)->protect_rtp(p));
      // The payload is encrypted (the header stays in the clear), and the tag has its length.
      const std::size_t tag = suite == srtp_suite::aes_cm_128_hmac_sha1_32 || suite == srtp_suite::aes_256_cm_hmac_sha1_32 ? 4
                              : suite == srtp_suite::aead_aes_128_gcm || suite == srtp_suite::aead_aes_256_gcm     ? 16
                                                                                                                    : 10;
      CHECK(p.size() == plain.size() + tag);
      CHECK(std::equal(plain.begin(), plain.begin() + 12, p.begin()));
      CHECK_FALSE(std::equal(plain.begin() + 12, plain.end(), p.begin() + 12));
      // One flipped bit fails authentication; the packet itself then passes once.
      auto damaged = p;
      damaged[20] ^= 1;
      std::size_t n = damaged.size();
      CHECK((*recv)->unprotect_rtp(damaged.data(), n) == srtp_check::auth_failed);
      n = p.size();
      REQUIRE((*recv)->unprotect_rtp(p.data(), n) == srtp_check::ok);
      CHECK(n == plain.size());
      CHECK(std::equal(plain.begin(), plain.end(), p.begin()));
    }
  }
}
