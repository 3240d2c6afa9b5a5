// Asterisk AudioSocket, driven by an emulator of Asterisk's side written from the published
// format (asterisk/documentation AudioSocket.md, res_audiosocket.c): UUID first, 20 ms frames
// of signed linear audio, a DTMF digit, hangup. The call must appear in the registry with its
// UUID, label and events, and its finals must equal those of the same bytes sent straight into
// an engine channel. Each hostile input gets an error message (kind 0xff, a readable reason)
// and a close, while an honest call alongside is untouched.
#include "tests/net/switch_test_util.hpp"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "net/switches/audiosocket_listener.hpp"
#include "tests/net/prometheus_samples.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

constexpr uint8_t kind_hangup = 0x00, kind_uuid = 0x01, kind_dtmf = 0x03, kind_slin = 0x10, kind_slin16 = 0x12,
                  kind_error = 0xff;
constexpr std::size_t samples_per_20ms_8k = 160;

const std::vector<uint8_t> uuid_bytes{0x4f, 0x1c, 0x2a, 0x9e, 0x10, 0x22, 0x47, 0x33,
                                      0x88, 0x01, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0x0f};
const std::string uuid_text = "4f1c2a9e-1022-4733-8801-aabbccddee0f";

std::vector<uint8_t> message(uint8_t kind, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> m{kind, static_cast<uint8_t>(payload.size() >> 8), static_cast<uint8_t>(payload.size() & 0xFF)};
  m.insert(m.end(), payload.begin(), payload.end());
  return m;
}

// Asterisk's side of one connection.
class asterisk {
 public:
  // `from`: the local address to connect from (any of 127/8 is this host, so tests can play
  // Asterisk servers at several addresses).
  explicit asterisk(uint16_t port, const std::string& from = "127.0.0.1") : socket_(ioc_) {
    socket_.open(tcp::v4());
    socket_.bind(tcp::endpoint(asio::ip::make_address(from), 0));
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }
  void send(uint8_t kind, const std::vector<uint8_t>& payload) { send_raw(message(kind, payload)); }
  void send_raw(const std::vector<uint8_t>& bytes) {
    beast::error_code ec;
    asio::write(socket_, asio::buffer(bytes), ec);  // may fail once the server has closed: the test reads why
  }
  void send_frames(const std::vector<std::vector<uint8_t>>& frames, std::size_t from, std::size_t to, uint8_t kind) {
    for (std::size_t i = from; i < to && i < frames.size(); ++i) send(kind, frames[i]);
  }
  void half_close() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
  }
  // Reads everything until the server closes; returns the error messages' texts (kind 0xff).
  // Anything else the server sends is a failure: it sends nothing but errors.
  std::vector<std::string> read_to_close() {
    std::vector<std::string> errors;
    for (;;) {
      std::array<uint8_t, 3> h{};
      beast::error_code ec;
      asio::read(socket_, asio::buffer(h), ec);
      if (ec) break;
      std::vector<uint8_t> payload((static_cast<std::size_t>(h[1]) << 8) | h[2]);
      asio::read(socket_, asio::buffer(payload), ec);
      if (ec) break;
      CHECK_MESSAGE(h[0] == kind_error, "the server sent a message of kind " << int(h[0]));
      errors.emplace_back(payload.begin(), payload.end());
    }
    return errors;
  }

 private:
  asio::io_context ioc_;
  tcp::socket socket_;
};

actors::channel_request pcm_request(int rate) {
  actors::channel_request req;
  req.sample_rate = rate;
  req.codec = "pcm_s16le";
  return req;
}

// The same audio at 16 kHz: every sample twice (a crude upsampling, enough to be speech at 16
// kHz and to differ from the 8 kHz bytes).
std::vector<int16_t> doubled(const std::vector<int16_t>& x) {
  std::vector<int16_t> out;
  for (const auto v : x) out.insert(out.end(), {v, v});
  return out;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("audiosocket") {
  TEST_CASE("AudioSocket call at 8 kHz: UUID, audio, DTMF, hangup -> a registered call with the direct channel's finals") {
    served s;
    REQUIRE(s.server->audiosocket_port() != 0);
    const auto frames = pcm16_frames(call_samples(0), samples_per_20ms_8k);
    asterisk a(s.server->audiosocket_port());
    a.send(kind_uuid, uuid_bytes);
    a.send_frames(frames, 0, frames.size() / 2, kind_slin);
    a.send(kind_dtmf, {'5'});
    a.send_frames(frames, frames.size() / 2, frames.size(), kind_slin);
    a.send(kind_hangup, {});
    // The server closes once the call's finals are in; it sends nothing back to Asterisk.
    CHECK(a.read_to_close().empty());

    const auto rec = ended_call(*s.server, "audiosocket");
    CHECK(rec.start.external_id == uuid_text);
    CHECK(rec.start.metadata["uuid"] == uuid_text);
    CHECK(rec.start.metadata["sample_rate"] == 8000);
    REQUIRE(rec.start.channel_labels == std::vector<std::string>{"caller"});
    CHECK(rec.end_reason == "hangup");
    REQUIRE(rec.events.size() == 1);
    CHECK(rec.events[0].type == "dtmf");
    CHECK(rec.events[0].data["digit"] == "5");
    const auto got = record_finals(rec, 0);
    const auto want = direct_finals(*s.engine, pcm_request(8000), frames);
    REQUIRE(want.size() >= 2);
    CHECK_MESSAGE(got == want, "audiosocket: " << joined(got) << "\ndirect: " << joined(want));
  }

  TEST_CASE("AudioSocket: exactly max_dtmf_before_audio DTMF messages before the first audio are all kept, in order") {
    served s;
    const auto frames = pcm16_frames(call_samples(0), samples_per_20ms_8k);
    asterisk a(s.server->audiosocket_port());
    a.send(kind_uuid, uuid_bytes);
    const std::string digits = "0123456789*#ABCD";
    for (std::size_t i = 0; i < net::switches::max_dtmf_before_audio; ++i)
      a.send(kind_dtmf, {static_cast<uint8_t>(digits[i % digits.size()])});
    a.send_frames(frames, 0, 50, kind_slin);  // 1 s of audio opens the call
    a.send(kind_hangup, {});
    CHECK(a.read_to_close().empty());  // no error message: the limit is not passed
    const auto rec = wait_ended_call(*s.server, "audiosocket");
    CHECK(rec.end_reason == "hangup");
    REQUIRE(rec.events.size() == net::switches::max_dtmf_before_audio);
    CHECK(rec.events.front().data["digit"] == "0");
    CHECK(rec.events.back().data["digit"] == std::string(1, digits[(net::switches::max_dtmf_before_audio - 1) % digits.size()]));
  }

  TEST_CASE("AudioSocket at 16 kHz (kind 0x12), ended by closing the socket: the finals of 16 kHz audio") {
    served s;
    const auto frames = pcm16_frames(doubled(call_samples(1)), 2 * samples_per_20ms_8k);
    asterisk a(s.server->audiosocket_port());
    a.send(kind_uuid, uuid_bytes);
    a.send_frames(frames, 0, frames.size(), kind_slin16);
    a.half_close();  // "socket closure is also sufficient" to end the call
    CHECK(a.read_to_close().empty());
    // The server closes at once (nothing can be sent to a closed peer); the call drains after.
    const auto rec = wait_ended_call(*s.server, "audiosocket");
    CHECK(rec.start.metadata["sample_rate"] == 16000);
    CHECK(rec.end_reason == "connection closed");
    const auto got = record_finals(rec, 0);
    const auto want = direct_finals(*s.engine, pcm_request(16000), frames);
    REQUIRE(want.size() >= 2);
    CHECK_MESSAGE(got == want, "audiosocket: " << joined(got) << "\ndirect: " << joined(want));
  }

  TEST_CASE("AudioSocket hostile inputs: each gets an error message and a close, an honest call alongside is untouched") {
    served s;
    const uint16_t port = s.server->audiosocket_port();
    const auto frames = pcm16_frames(call_samples(0), samples_per_20ms_8k);
    const auto want = direct_finals(*s.engine, pcm_request(8000), frames);
    REQUIRE(want.size() >= 2);

    // The honest call sends its first half before the attacks and the rest after them.
    asterisk honest(port);
    honest.send(kind_uuid, uuid_bytes);
    honest.send_frames(frames, 0, frames.size() / 2, kind_slin);

    auto attack = [&](const std::vector<std::vector<uint8_t>>& messages) {
      asterisk bad(port);
      for (const auto& m : messages) bad.send_raw(m);
      const auto errors = bad.read_to_close();
      REQUIRE(errors.size() == 1);
      return errors.front();
    };
    const auto audio = message(kind_slin, frames[10]);
    CHECK(contains(attack({audio}), "first message must be the UUID"));
    CHECK(contains(attack({message(kind_dtmf, {'1'})}), "first message must be the UUID"));
    CHECK(contains(attack({message(kind_uuid, {1, 2, 3})}), "3 bytes, not 16"));
    CHECK(contains(attack({message(kind_uuid, uuid_bytes), message(kind_uuid, uuid_bytes)}), "a second UUID"));
    CHECK(contains(attack({message(kind_uuid, uuid_bytes), message(0x42, {1, 2})}), "unknown message kind 0x42"));
    CHECK(contains(attack({message(kind_uuid, uuid_bytes), message(kind_dtmf, {'x'})}), "is not 0-9"));
    CHECK(contains(attack({message(kind_uuid, uuid_bytes), message(kind_dtmf, {'1', '2'})}), "2 bytes, not 1"));
    {
      // DTMF without end before any audio: held up to max_dtmf_before_audio, then refused.
      std::vector<std::vector<uint8_t>> digits{message(kind_uuid, uuid_bytes)};
      for (std::size_t i = 0; i <= net::switches::max_dtmf_before_audio; ++i) digits.push_back(message(kind_dtmf, {'5'}));
      CHECK(attack(digits) == "more than " + std::to_string(net::switches::max_dtmf_before_audio) +
                                  " DTMF messages before the first audio");
    }
    CHECK(contains(attack({message(kind_uuid, uuid_bytes), audio, message(kind_slin16, frames[11])}),
                   "rate changed from 8000 to 16000 Hz"));
    {
      // Truncated: a header announcing 320 bytes, 100 of them, then the socket closes.
      asterisk cut(port);
      cut.send(kind_uuid, uuid_bytes);
      cut.send_raw(audio);
      auto partial = message(kind_slin, frames[12]);
      partial.resize(3 + 100);
      cut.send_raw(partial);
      cut.half_close();
      CHECK(cut.read_to_close().empty());
    }

    honest.send_frames(frames, frames.size() / 2, frames.size(), kind_slin);
    honest.send(kind_hangup, {});
    CHECK(honest.read_to_close().empty());

    // The attackers' calls end once their few frames are transcribed.
    CHECK(poll_until([&] {
      for (const auto& c : s.server->calls().list())
        if (c.live) return false;
      return true;
    }));
    int rate_change = 0, truncated = 0, honest_calls = 0;
    for (const auto& c : s.server->calls().list()) {
      if (c.live) continue;
      if (contains(c.end_reason, "error: the audio rate changed")) ++rate_change;
      if (c.end_reason == "connection closed inside a message") ++truncated;
      if (c.end_reason != "hangup") continue;
      ++honest_calls;
      const auto got = record_finals(c, 0);
      CHECK_MESSAGE(got == want, "honest: " << joined(got) << "\ndirect: " << joined(want));
    }
    CHECK(honest_calls == 1);
    CHECK(rate_change == 1);
    CHECK(truncated == 1);
    // Only connections that sent audio became calls: the honest one, the rate change, the cut one.
    CHECK(s.server->calls().list().size() == 3);
  }

  TEST_CASE("AudioSocket faster than server.switch_max_speed: one error message naming the key, the close, the call ended with it") {
    config::sluice_config cfg;
    cfg.server.switch_max_speed = 1.5;
    cfg.server.switch_burst_s = 2;
    served s(cfg);
    const auto frames = pcm16_frames(call_samples(0), samples_per_20ms_8k);
    REQUIRE(frames.size() * 20 > 10000);  // far more than 2 s of burst: the cap must trip
    asterisk fast(s.server->audiosocket_port());
    fast.send(kind_uuid, uuid_bytes);
    fast.send_frames(frames, 0, frames.size(), kind_slin);  // the whole call at network speed
    fast.half_close();
    const auto errors = fast.read_to_close();
    REQUIRE(errors.size() == 1);
    MESSAGE("AudioSocket was told: " << errors.front());
    CHECK(errors.front() == "audio faster than 1.5x real time after a 2 s burst (server.switch_max_speed, switch_burst_s)");
    CHECK(poll_until([&] {
      const auto c = s.server->calls().list();
      return c.size() == 1 && !c.front().live;
    }));
    const auto c = s.server->calls().list();
    REQUIRE(c.size() == 1);
    CHECK(c.front().end_reason == "error: " + errors.front());
  }

  TEST_CASE("AudioSocket connection limit: past audiosocket.max_connections a connection is told why and closed") {
    config::sluice_config cfg;
    cfg.audiosocket.max_connections = 1;
    served s(cfg);
    asterisk first(s.server->audiosocket_port());
    first.send(kind_uuid, uuid_bytes);
    asterisk second(s.server->audiosocket_port());
    const auto errors = second.read_to_close();
    REQUIRE(errors.size() == 1);
    CHECK(contains(errors[0], "too many AudioSocket connections (audiosocket.max_connections = 1)"));
    first.send(kind_hangup, {});
    CHECK(first.read_to_close().empty());
  }

  TEST_CASE("AudioSocket idle: a connection silent for audiosocket.idle_timeout_s is told so and closed") {
    config::sluice_config cfg;
    cfg.audiosocket.idle_timeout_s = 1;
    served s(cfg);
    asterisk a(s.server->audiosocket_port());
    a.send(kind_uuid, uuid_bytes);
    const auto errors = a.read_to_close();
    REQUIRE(errors.size() == 1);
    CHECK(contains(errors[0], "no message for 1 s (audiosocket.idle_timeout_s)"));
  }

  TEST_CASE("audiosocket.allowed_sources: an address outside it is told why and closed with no call, one inside streams, and tenant_sources gives each address its tenant") {
    config::sluice_config cfg;
    cfg.audiosocket.allowed_sources = "127.0.0.1, 127.0.0.2/31";  // .1, .2 and .3, not .4
    cfg.audiosocket.tenant_sources = "acme: 127.0.0.2; globex: 127.0.0.3";
    cfg.audiosocket.tenant = "initech";
    served s(cfg);
    const auto frames = pcm16_frames(call_samples(0), samples_per_20ms_8k);

    asterisk stranger(s.server->audiosocket_port(), "127.0.0.4");
    stranger.send(kind_uuid, uuid_bytes);
    stranger.send_frames(frames, 0, 50, kind_slin);
    const auto errors = stranger.read_to_close();
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] == "this address may not connect (audiosocket.allowed_sources)");

    // One call from each allowed address, one after the other: each is its tenant's.
    std::map<std::string, std::string> tenant_of;
    for (const std::string from : {"127.0.0.2", "127.0.0.3", "127.0.0.1"}) {
      asterisk a(s.server->audiosocket_port(), from);
      auto id = uuid_bytes;
      id.back() = static_cast<uint8_t>(from.back());
      a.send(kind_uuid, id);
      a.send_frames(frames, 0, 100, kind_slin);
      a.send(kind_hangup, {});
      CHECK(a.read_to_close().empty());
      REQUIRE(poll_until([&] {
        for (const auto& c : s.server->calls().list())
          if (c.start.metadata["remote"].get<std::string>().rfind(from + ":", 0) == 0 && !c.live) return true;
        return false;
      }));
      for (const auto& c : s.server->calls().list())
        if (c.start.metadata["remote"].get<std::string>().rfind(from + ":", 0) == 0) tenant_of[from] = c.start.tenant;
    }
    CHECK(tenant_of["127.0.0.2"] == "acme");
    CHECK(tenant_of["127.0.0.3"] == "globex");
    CHECK(tenant_of["127.0.0.1"] == "initech");  // in no tenant's list: audiosocket.tenant
    // The refused connection never became a call.
    CHECK(s.server->calls().list().size() == 3);
  }

  TEST_CASE("a stranger refused by audiosocket.allowed_sources takes no call slot: with max_connections 1 an Asterisk server behind it still streams") {
    config::sluice_config cfg;
    cfg.audiosocket.allowed_sources = "127.0.0.1";
    cfg.audiosocket.max_connections = 1;
    served s(cfg);
    const auto frames = pcm16_frames(call_samples(0), samples_per_20ms_8k);
    // The stranger connects first and stays (it neither reads nor closes yet).
    asterisk stranger(s.server->audiosocket_port(), "127.0.0.4");
    stranger.send(kind_uuid, uuid_bytes);
    asterisk a(s.server->audiosocket_port());
    a.send(kind_uuid, uuid_bytes);
    a.send_frames(frames, 0, 100, kind_slin);
    a.send(kind_hangup, {});
    CHECK(a.read_to_close().empty());  // not "too many AudioSocket connections"
    const auto rec = wait_ended_call(*s.server, "audiosocket");
    CHECK(rec.end_reason == "hangup");
    const auto errors = stranger.read_to_close();
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] == "this address may not connect (audiosocket.allowed_sources)");
  }

  TEST_CASE("/metrics: AudioSocket refusals by reason and the server's connection and flow-control figures, zeros from the first scrape, as prometheus_client reads them") {
    config::sluice_config cfg;
    cfg.audiosocket.allowed_sources = "127.0.0.1";
    cfg.audiosocket.max_connections = 1;
    served s(cfg);
    temp_dir dir;
    // What prometheus_client's parser reads of the server's own families: type, name, the
    // reason label ('-' without one), value.
    auto scrape = [&] {
      const auto m = http_request(s.port, http::verb::get, "/metrics");
      REQUIRE(m.status == 200);
      return prometheus_samples(dir, m.body, "'sluice_audiosocket', 'sluice_ws_', 'sluice_server_'", "reason");
    };
    // Before anything: every family, at zero; the scrape's own connection is the one open.
    CHECK(scrape() ==
          "gauge sluice_server_connections - 1\n"
          "gauge sluice_server_draining - 0\n"
          "gauge sluice_ws_streams - 0\n"
          "counter sluice_ws_read_pauses_total - 0\n"
          "gauge sluice_ws_paused_streams - 0\n"
          "gauge sluice_ws_buffered_audio_peak_milliseconds - 0\n"
          "counter sluice_ws_tls_half_closes_total - 0\n"
          "counter sluice_audiosocket_refused_total source 0\n"
          "counter sluice_audiosocket_refused_total limit 0\n");
    // A stranger, then an Asterisk server over the limit while another holds the one slot.
    asterisk stranger(s.server->audiosocket_port(), "127.0.0.4");
    CHECK(stranger.read_to_close().size() == 1);
    asterisk holder(s.server->audiosocket_port());
    holder.send(kind_uuid, uuid_bytes);
    asterisk second(s.server->audiosocket_port());
    CHECK(second.read_to_close().size() == 1);
    holder.send(kind_hangup, {});
    CHECK(holder.read_to_close().empty());
    const auto after = scrape();
    CHECK(after.find("counter sluice_audiosocket_refused_total source 1\n") != std::string::npos);
    CHECK(after.find("counter sluice_audiosocket_refused_total limit 1\n") != std::string::npos);
  }

  TEST_CASE("audiosocket.allowed_sources, tenant_sources and tenant are checked at start, by name") {
    served s;
    auto start = [&](const config::audiosocket_config& a) {
      config::sluice_config c;
      c.server.port = 0;
      c.audiosocket = a;
      c.audiosocket.port = 0;
      return net::server::start(*s.engine, c.server, c.auth, net::server::no_listeners(), c.audiosocket);
    };
    config::audiosocket_config bad;
    bad.allowed_sources = "127.0.0.1, asterisk.example";
    auto r = start(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(contains(r.error().message, "audiosocket.allowed_sources"));
    CHECK(contains(r.error().message, "asterisk.example"));
    bad = {};
    bad.tenant_sources = "acme 10.0.0.0/8";
    r = start(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(contains(r.error().message, "audiosocket.tenant_sources"));
    bad = {};
    bad.tenant = "acme corp";
    r = start(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(contains(r.error().message, "audiosocket.tenant = \"acme corp\""));
    // A public address is served once allowed_sources names who may connect.
    config::audiosocket_config pub;
    pub.host = "0.0.0.0";
    pub.allowed_sources = "192.0.2.0/24";
    r = start(pub);
    REQUIRE_MESSAGE(r.has_value(), (r ? std::string() : r.error().message));
    CHECK((*r)->audiosocket_port() != 0);
  }

  TEST_CASE("AudioSocket listener: disabled in config means no port, a public address needs allow_public") {
    config::sluice_config cfg;
    cfg.audiosocket.enabled = false;
    served s(cfg);
    CHECK(s.server->audiosocket_port() == 0);
    config::sluice_config pub;
    pub.server.port = 0;
    pub.audiosocket.port = 0;
    pub.audiosocket.host = "0.0.0.0";
    auto refused = net::server::start(*s.engine, pub.server, pub.auth, net::server::no_listeners(), pub.audiosocket);
    REQUIRE_FALSE(refused.has_value());
    CHECK(contains(refused.error().message, "audiosocket.allow_public"));
  }
}
