// An established (or ringing) dialog: re-INVITE and UPDATE (with SIPREC metadata updates), the answer once the channels are open, the
// periodic timeouts, and the end, which drains every stream before its channel is told.
#include <spdlog/spdlog.h>

#include "net/sip/sip_service_impl.hpp"
#include "net/sip/siprec_metadata.hpp"

namespace sluice::net::sip {

void sip_service::impl::on_reinvite(sip_call& c, const sip_t* sip) { on_session_change(c, sip, "re-INVITE"); }

void sip_service::impl::on_update(sip_call& c, const sip_t* sip) { on_session_change(c, sip, "UPDATE"); }

void sip_service::impl::on_session_change(sip_call& c, const sip_t* sip, const char* method) {
  const bool update = std::string_view(method) == "UPDATE";
  // Without a body: a re-INVITE asks for our offer (the current answer again); an UPDATE is a
  // session refresh (RFC 3311 5.2: answered 200 without a body).
  if (!sip || !sip->sip_payload || sip->sip_payload->pl_len == 0 || !c.answered) {
    if (!c.answered) return (void)nua_respond(c.nh, SIP_491_REQUEST_PENDING, NUTAG_WITH_THIS(nua), TAG_END());
    if (update) return (void)nua_respond(c.nh, SIP_200_OK, NUTAG_WITH_THIS(nua),
                                     TAG_IF(!c.contact.empty(), SIPTAG_CONTACT_STR(c.contact.c_str())), TAG_END());
    nua_respond(c.nh, SIP_200_OK, NUTAG_WITH_THIS(nua), TAG_IF(!c.contact.empty(), SIPTAG_CONTACT_STR(c.contact.c_str())),
                SIPTAG_CONTENT_TYPE_STR("application/sdp"),
                SIPTAG_PAYLOAD_STR(c.answer.c_str()), TAG_END());
    return;
  }
  auto body = split_invite_body(content_type_of(sip), std::string_view(sip->sip_payload->pl_data, sip->sip_payload->pl_len));
  if (body && !body->rs_metadata.empty()) {
    // RFC 7866 7.1.1: metadata updates come by re-INVITE or UPDATE; broken metadata costs the
    // update, not the call.
    if (auto m = parse_rs_metadata(body->rs_metadata)) apply_siprec_update(c, *m);
    else spdlog::info("sip call {}: {} metadata ignored: {}", c.id, method, m.error().message);
  }
  auto offer = body ? parse_offer(body->sdp, max_streams_per_call, policy(c.over_tls))
                    : result<sdp_offer>(tl::unexpected(body.error()));
  // The streams' receivers and channels stay as they are: a new offer must keep their number,
  // codecs and SRTP suites (hold, resume, a new remote address, a session refresh, new SRTP keys
  // all do).
  bool same = offer.has_value() && offer->accepted() == c.offer.accepted();
  // Accepted streams of the new offer, each with its receiver, whose peer key changed.
  std::vector<std::pair<std::size_t, sdes_crypto>> rekeyed;
  if (same) {
    std::size_t k = 0, n = 0;
    for (const auto& s : offer->streams)
      if (s.accepted) {
        while (k < c.offer.streams.size() && !c.offer.streams[k].accepted) ++k;
        const bool here = k < c.offer.streams.size();
        same = same && here && c.offer.streams[k].codec.codec == s.codec.codec &&
               c.offer.streams[k].codec.payload_type == s.codec.payload_type &&
               c.offer.streams[k].secure == s.secure &&
               (!s.secure || c.offer.streams[k].remote_crypto.suite == s.remote_crypto.suite);
        if (same && s.secure && c.offer.streams[k].remote_crypto.key != s.remote_crypto.key)
          rekeyed.emplace_back(n, s.remote_crypto);
        ++k;
        ++n;
      }
  }
  if (same) {
    if (auto keys = choose_local_keys(*offer, &c.offer); !keys) same = false;
  }
  if (!same) {
    const auto warning = warning_of(std::string("a ") + method + " may not change the streams, codecs or SRTP suites");
    nua_respond(c.nh, SIP_488_NOT_ACCEPTABLE, NUTAG_WITH_THIS(nua), SIPTAG_WARNING_STR(warning.c_str()), TAG_END());
    return;
  }
  // RFC 4568 7.1.4: new keys in a re-offer start a new crypto context for what the peer sends.
  // Every new session is made before any stream takes one: a refusal leaves the call as it was.
  std::vector<std::unique_ptr<srtp_session>> sessions;
  for (const auto& [i, key] : rekeyed) {
    auto in = srtp_session::make(key, srtp_session::direction::inbound);
    if (!in) {
      const auto warning = warning_of(in.error().message);
      nua_respond(c.nh, SIP_488_NOT_ACCEPTABLE, NUTAG_WITH_THIS(nua), SIPTAG_WARNING_STR(warning.c_str()), TAG_END());
      return;
    }
    sessions.push_back(std::move(*in));
  }
  for (std::size_t j = 0; j < rekeyed.size(); ++j) {
    const auto i = rekeyed[j].first;
    if (i < c.rtp.size()) c.rtp[i]->rekey(std::move(sessions[j]));
    spdlog::info("sip call {}: {} re-keys SRTP stream {}", c.id, method, i);
    calls::call_event ev;
    ev.type = "srtp_rekey";
    ev.channel = static_cast<int>(i);
    ev.at_ms = steady_ms() - c.started_ms;
    ev.data = {{"method", method}, {"suite", suite_name(rekeyed[j].second.suite)}};
    registry->event(c.id, std::move(ev));
  }
  c.offer = std::move(*offer);
  std::vector<uint16_t> ports;
  for (const auto& r : c.rtp) ports.push_back(r->port());
  c.answer = render_answer(c.offer, cfg.host, ports, c.session_id, ++c.session_version);
  nua_respond(c.nh, SIP_200_OK, NUTAG_WITH_THIS(nua), TAG_IF(!c.contact.empty(), SIPTAG_CONTACT_STR(c.contact.c_str())),
                SIPTAG_CONTENT_TYPE_STR("application/sdp"),
              SIPTAG_PAYLOAD_STR(c.answer.c_str()), TAG_END());
  spdlog::info("sip call {}: {} answered (version {})", c.id, method, c.session_version);
}

void sip_service::impl::apply_siprec_update(sip_call& c, const siprec_metadata& m) {
  registry->update_metadata(c.id, {{"siprec", m.to_json()}});
  // The channels keep the labels they were opened with; who now sends each stream (a transfer,
  // a new participant) is an event of the call, one label per channel in channel order.
  nlohmann::json labels = nlohmann::json::array();
  for (const auto& s : c.offer.streams)
    if (s.accepted) labels.push_back(s.label.empty() ? std::string() : m.channel_label(s.label));
  calls::call_event ev;
  ev.type = "siprec_metadata";
  ev.at_ms = steady_ms() - c.started_ms;
  ev.data = {{"labels", labels}, {"participants", m.participants.size()}};
  registry->event(c.id, std::move(ev));
}

void sip_service::impl::on_channel_open(uint64_t key, bool ok, const std::string& reason) {
  auto it = calls.find(key);
  if (it == calls.end()) return;  // over already (cancelled, ...)
  auto& c = *it->second;
  if (!ok && c.open_error.empty()) c.open_error = reason;
  if (--c.opens_pending > 0 || c.refused || c.answered) return;
  if (!c.open_error.empty()) {
    spdlog::warn("sip call {}: the engine refused its channels: {}", c.id, c.open_error);
    c.refused = true;
    c.end_reason = "refused: " + c.open_error;
    refuse_503(c.nh, "Engine full");
    return;
  }
  c.answer_at_ms = steady_ms() + cfg.answer_delay_ms;
  if (cfg.answer_delay_ms == 0) answer(c);
}

void sip_service::impl::answer(sip_call& c) {
  c.answer_at_ms.reset();
  std::vector<uint16_t> ports;
  for (const auto& r : c.rtp) ports.push_back(r->port());
  c.answer = render_answer(c.offer, cfg.host, ports, c.session_id, c.session_version);
  for (const auto& r : c.rtp) r->start();
  c.answered = true;
  nua_respond(c.nh, SIP_200_OK, TAG_IF(!c.contact.empty(), SIPTAG_CONTACT_STR(c.contact.c_str())),
              SIPTAG_CONTENT_TYPE_STR("application/sdp"), SIPTAG_PAYLOAD_STR(c.answer.c_str()),
              TAG_END());
}

void sip_service::impl::terminated(nua_handle_t* nh, const std::string& status_reason) {
  auto c = find(nh);
  if (c) {
    std::string reason = c->end_reason;
    if (reason.empty()) reason = !status_reason.empty() && !c->answered ? "refused: " + status_reason : "hangup";
    spdlog::info("sip call {}: over ({})", c->id, reason);
    // Each receiver hands over what its jitter buffer still holds, then its channel gets its
    // end: the last utterance is finished, not cut.
    // The streams' RTP figures go into the call's metadata ("rtp", one object per stream) when
    // the last of them has stopped, before any channel gets its end (so before the call ends).
    struct rtp_report {
      std::mutex mu;
      nlohmann::json streams = nlohmann::json::array();
      std::size_t remaining = 0;
    };
    auto report = std::make_shared<rtp_report>();
    report->remaining = c->rtp.size();
    report->streams = nlohmann::json::array();
    for (std::size_t i = 0; i < c->rtp.size(); ++i) report->streams.push_back(nullptr);
    for (std::size_t i = 0; i < c->rtp.size(); ++i)
      c->rtp[i]->stop([bridges = c->bridges, r = c->rtp[i], report, i, reg = registry, id = c->id, totals = counters] {
        const auto& k = r->counters();
        totals->srtp_auth_failed += static_cast<int64_t>(k.srtp_auth_failed.load());
        totals->srtp_replayed += static_cast<int64_t>(k.srtp_replayed.load());
        const auto rate = r->sample_rate();
        std::lock_guard lock(report->mu);
        report->streams[i] = {{"datagrams", k.datagrams.load()},          {"not_rtp", k.not_rtp.load()},
                              {"foreign_source", k.foreign_source.load()}, {"over_rate", k.over_rate.load()},
                              {"lost", k.packets_lost.load()},
                              {"late", k.late.load()},                     {"reordered", k.reordered.load()},
                              {"max_hold_ms", k.max_hold_ms.load()},
                              {"concealed_ms", rate > 0 ? k.concealed_samples.load() * 1000 / rate : 0},
                              {"rtcp_received", k.rtcp_received.load()},  {"rtcp_invalid", k.rtcp_invalid.load()},
                              {"rtcp_sent", k.rtcp_sent.load()},          {"rtcp_bye", k.rtcp_bye.load()},
                              {"comfort_noise", k.comfort_noise_packets.load()},
                              {"srtp_auth_failed", k.srtp_auth_failed.load()}, {"srtp_replayed", k.srtp_replayed.load()},
                              {"comfort_noise_ms", rate > 0 ? k.comfort_noise_samples.load() * 1000 / rate : 0}};
        if (--report->remaining > 0) return;
        reg->update_metadata(id, {{"rtp", report->streams}});
        for (const auto& b : bridges) caf::anon_send(b, actors::end_atom::value);
      });
    c->completion->call_over(reason);
    by_handle.erase(nh);
    calls.erase(c->key);
    --counters->live;
  }
  nua_handle_destroy(nh);
}

void sip_service::impl::check_calls() {
  const int64_t now = steady_ms();
  for (auto& [key, c] : calls) {
    if (c->answer_at_ms && now >= *c->answer_at_ms && !c->answered && !c->refused) {
      answer(*c);
      continue;
    }
    if (!c->answered || !c->end_reason.empty()) continue;
    int64_t last = 0;
    for (const auto& r : c->rtp) last = std::max(last, r->last_packet_ms());
    const char* why = nullptr;
    if (now - last > static_cast<int64_t>(cfg.rtp_timeout_s) * 1000) why = "rtp timeout";
    else if (now - c->started_ms > static_cast<int64_t>(cfg.max_call_s) * 1000) why = "max duration";
    if (!why) continue;
    spdlog::info("sip call {}: hanging up ({})", c->id, why);
    c->end_reason = why;
    nua_bye(c->nh, TAG_END());
  }
}

}  // namespace sluice::net::sip
