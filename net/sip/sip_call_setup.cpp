// A new call: the INVITE's body and offer are checked, the call is registered, its RTP ports
// and engine channels opened, and it rings until the channels answer (sip_dialog.cpp).
#include <cctype>
#include <cstring>
#include <optional>

#include <netinet/in.h>

#include <sofia-sip/msg_addr.h>
#include <spdlog/spdlog.h>

#include "net/sip/sip_service_impl.hpp"
#include "net/sip/siprec_metadata.hpp"

namespace sluice::net::sip {

namespace {
// Where the peer listens for RTCP: its RTP port with rtcp-mux, else a=rtcp or RTP + 1 (RFC 3605,
// RFC 3550 11). An address that is not a literal (a name in c=) leaves it unknown until the
// peer's own RTCP shows it.
boost::asio::ip::udp::endpoint rtcp_remote(const offered_stream& s) {
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(s.remote_address, ec);
  if (ec) return {};
  const auto port = s.rtcp_mux ? s.remote_port : s.rtcp_port ? s.rtcp_port : static_cast<uint16_t>(s.remote_port + 1);
  return {address, port};
}
// The source address of a received message (sofia keeps the peer's address with it).
std::optional<boost::asio::ip::address> source_address(msg_t* msg) {
  su_addrinfo_t* ai = msg ? msg_addrinfo(msg) : nullptr;
  if (!ai || !ai->ai_addr) return std::nullopt;
  if (ai->ai_addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(ai->ai_addr);
    return boost::asio::ip::address_v4(ntohl(in->sin_addr.s_addr));
  }
  if (ai->ai_addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(ai->ai_addr);
    boost::asio::ip::address_v6::bytes_type b;
    std::memcpy(b.data(), &in6->sin6_addr, b.size());
    return boost::asio::ip::address_v6(b);
  }
  return std::nullopt;
}
}  // namespace

void sip_service::impl::enable_rtcp(rtp_receiver& r, const offered_stream& s, calls::call_id id) {
  const int interval = cfg.rtcp_interval_ms;
  if (auto ok = r.enable_rtcp(cfg.host, s.rtcp_mux, rtcp_remote(s), interval, "sluice@" + cfg.host); !ok)
    spdlog::warn("sip call {}: no RTCP for the stream on port {}: {}", id, r.port(), ok.error().message);
}

void sip_service::impl::on_invite(nua_handle_t* nh, const sip_t* sip) {
  const std::string call_id = sip && sip->sip_call_id && sip->sip_call_id->i_id ? sip->sip_call_id->i_id : "";
  // The address the INVITE's packets came from (not its headers, which the caller writes).
  const auto source = source_address(nua_current_request(nua));
  if (!allowed.empty()) {
    if (!source || !allowed.allows(*source)) {
      spdlog::info("sip {}: refused 403: {} is not in sip.allowed_sources", call_id,
                   source ? source->to_string() : std::string("an unknown source"));
      ++counters->refused_source;
      nua_respond(nh, SIP_403_FORBIDDEN, SIPTAG_WARNING_STR("399 sluice \"this address may not call (sip.allowed_sources)\""),
                  TAG_END());
      return;
    }
  }
  if (stop_requested) return refuse_503(nh, "Shutting down");
  if (counters->live >= cfg.max_calls) {
    spdlog::info("sip {}: refused, {} calls at once (sip.max_calls)", call_id, cfg.max_calls);
    return refuse_503(nh, "Maximum calls in progress");
  }
  if (!sip || !sip->sip_payload || !sip->sip_payload->pl_data || sip->sip_payload->pl_len == 0) {
    ++counters->refused_offer;
    nua_respond(nh, SIP_488_NOT_ACCEPTABLE, SIPTAG_WARNING_STR("399 sluice \"an INVITE without an SDP offer\""),
                TAG_END());
    return;
  }
  auto body = split_invite_body(content_type_of(sip), std::string_view(sip->sip_payload->pl_data, sip->sip_payload->pl_len));
  if (!body) {
    spdlog::info("sip {}: body refused: {}", call_id, body.error().message);
    ++counters->refused_request;
    if (body.error().code == errc::unsupported)
      nua_respond(nh, SIP_415_UNSUPPORTED_MEDIA, SIPTAG_ACCEPT_STR("application/sdp, multipart/mixed"), TAG_END());
    else
      nua_respond(nh, SIP_400_BAD_REQUEST, SIPTAG_WARNING_STR(warning_of(body.error().message).c_str()), TAG_END());
    return;
  }
  // The transport the INVITE came over, from its topmost Via ("SIP/2.0/TLS" -> "tls"): the
  // hop that sent it to us wrote it. It decides whether SDES keys may be taken (RFC 4568 8.3).
  // sofia's nta checks it against the transport the message came over and drops a mismatch
  // ("Via check: invalid transport"), so a Via saying TLS did come over TLS.
  std::string proto;
  if (sip->sip_via && sip->sip_via->v_protocol) {
    proto = sip->sip_via->v_protocol;
    proto = proto.substr(proto.rfind('/') + 1);
    for (auto& ch : proto) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  const bool over_tls = proto == "tls";
  auto offer = parse_offer(body->sdp, max_streams_per_call, policy(over_tls));
  if (offer) {
    if (auto keys = choose_local_keys(*offer); !keys) offer = tl::unexpected(keys.error());
  }
  if (!offer) {
    spdlog::info("sip {}: offer refused: {}", call_id, offer.error().message);
    ++counters->refused_offer;
    nua_respond(nh, SIP_488_NOT_ACCEPTABLE, SIPTAG_WARNING_STR(warning_of(offer.error().message).c_str()), TAG_END());
    return;
  }
  // SIPREC (RFC 7866): the recorder names who sends each stream; broken metadata costs the
  // labels, not the recording.
  std::optional<siprec_metadata> siprec;
  std::string siprec_error;
  if (!body->rs_metadata.empty()) {
    auto m = parse_rs_metadata(body->rs_metadata);
    if (m) siprec = std::move(*m);
    else siprec_error = m.error().message;
  }

  auto c = std::make_shared<sip_call>();
  c->key = next_key++;
  c->nh = nh;
  c->offer = std::move(*offer);
  c->started_ms = steady_ms();
  c->session_id = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());

  calls::call_start start;
  start.source = body->rs_metadata.empty() ? "sip" : "siprec";
  start.external_id = call_id;
  start.tenant = source ? tenants.tenant_of(*source, cfg.tenant) : cfg.tenant;
  nlohmann::json streams = nlohmann::json::array();
  const bool one = c->offer.accepted() == 1;
  int n = 0;
  for (const auto& s : c->offer.streams) {
    if (!s.accepted) continue;
    ++n;
    std::string label = siprec && !s.label.empty() ? siprec->channel_label(s.label) : std::string();
    if (label.empty()) label = !s.label.empty() ? s.label : one ? "caller" : "stream" + std::to_string(n);
    start.channel_labels.push_back(std::move(label));
    streams.push_back({{"codec", codec_name(s.codec.codec)}, {"payload_type", s.codec.payload_type},
                       {"comfort_noise", s.codec.comfort_noise_pt >= 0},
                       {"remote", s.remote_address + ":" + std::to_string(s.remote_port)},
                       {"telephone_event", s.telephone_event_pt >= 0},
                       {"srtp", s.secure ? nlohmann::json(suite_name(s.remote_crypto.suite)) : nlohmann::json(false)}});
  }
  start.metadata = {{"from", address_of(sip->sip_from)}, {"to", address_of(sip->sip_to)}, {"streams", streams}};
  if (sip->sip_user_agent && sip->sip_user_agent->g_string) start.metadata["user_agent"] = sip->sip_user_agent->g_string;
  c->over_tls = over_tls;
  if (!proto.empty()) {
    start.metadata["transport"] = proto;
    const bool sips_request = sip->sip_request && sip->sip_request->rq_url->url_type == url_sips;
    if (proto == "tls" && !sips_request) {
      const bool v6 = cfg.host.find(':') != std::string::npos;
      c->contact = "<sip:" + (v6 ? "[" + cfg.host + "]" : cfg.host) + ":" + std::to_string(cfg.tls_port) + ";transport=tls>";
    }
  }
  if (siprec) start.metadata["siprec"] = siprec->to_json();
  if (!siprec_error.empty()) start.metadata["siprec_error"] = siprec_error;

  // RTP ports first: without them nothing is registered.
  jitter_buffer_config jc;
  jc.max_delay_ms = cfg.jitter_max_delay_ms;
  jc.max_fill_ms = cfg.max_fill_ms;
  std::vector<std::shared_ptr<rtp_receiver>> rtp;
  for (const auto& s : c->offer.streams) {
    if (!s.accepted) continue;
    jc.clock_rate = s.codec.clock_rate;
    auto r = rtp_receiver::open(ioc, cfg.host, pool, jc, s.codec, s.telephone_event_pt, {});
    if (!r) {
      spdlog::warn("sip {}: refused: {}", call_id, r.error().message);
      return refuse_503(nh, "No free RTP port");
    }
    if (s.secure) {
      auto in = srtp_session::make(s.remote_crypto, srtp_session::direction::inbound);
      auto out = srtp_session::make(s.local_crypto, srtp_session::direction::outbound);
      if (!in || !out) {
        const auto& e = !in ? in.error() : out.error();
        spdlog::warn("sip {}: refused: {}", call_id, e.message);
        ++counters->refused_offer;
        nua_respond(nh, SIP_488_NOT_ACCEPTABLE, SIPTAG_WARNING_STR(warning_of(e.message).c_str()), TAG_END());
        return;
      }
      (*r)->set_srtp(std::move(*in), std::move(*out));
    }
    rtp.push_back(std::move(*r));
  }
  c->id = registry->begin(start);
  c->completion = std::make_shared<call_completion>(registry, c->id, static_cast<int>(rtp.size()));
  calls[c->key] = c;
  by_handle[nh] = c->key;
  ++counters->live;
  ++counters->calls;
  for (const auto& s : c->offer.streams) counters->srtp_streams += s.accepted && s.secure;
  spdlog::info("sip {}: call {} from {} with {} stream(s)", call_id, c->id, address_of(sip->sip_from), rtp.size());

  // One bridge per stream; the receivers get their sinks (not started yet, so not racing).
  c->opens_pending = static_cast<int>(rtp.size());
  std::size_t i = 0;
  for (const auto& s : c->offer.streams) {
    if (!s.accepted) continue;
    actors::channel_request req;
    req.label = start.channel_labels[i];
    req.tenant = start.tenant;
    req.sample_rate = s.codec.sample_rate;
    req.codec = "pcm_s16le";
    bridge_args a;
    a.supervisor = engine->supervisor();
    a.request = req;
    a.call = c->completion;
    a.channel_index = static_cast<int>(i);
    a.on_open = [q = commands, key = c->key](bool ok, const std::string& reason) {
      post(q, [key, ok, reason](impl& self) { self.on_channel_open(key, ok, reason); });
    };
    auto bridge = spawn_channel_bridge(engine->system(), std::move(a));
    c->bridges.push_back(bridge);
    rtp_sinks sinks;
    sinks.audio = [bridge](std::vector<uint8_t> pcm) { caf::anon_send(bridge, actors::audio_atom::value, std::move(pcm)); };
    sinks.dtmf = [reg = registry, id = c->id, ch = static_cast<int>(i), t0 = c->started_ms](char digit, int ms) {
      calls::call_event ev;
      ev.type = "dtmf";
      ev.channel = ch;
      ev.at_ms = steady_ms() - t0;
      ev.data = {{"digit", std::string(1, digit)}, {"duration_ms", ms}};
      reg->event(id, std::move(ev));
    };
    rtp[i]->set_sinks(std::move(sinks));
    rtp[i]->set_rate_limit(cfg.max_stream_kbps);
    if (cfg.rtcp_interval_ms > 0) enable_rtcp(*rtp[i], s, c->id);
    ++i;
  }
  c->rtp = std::move(rtp);
  nua_respond(nh, SIP_180_RINGING, TAG_IF(!c->contact.empty(), SIPTAG_CONTACT_STR(c->contact.c_str())), TAG_END());
}

}  // namespace sluice::net::sip
