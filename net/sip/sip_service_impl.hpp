#pragma once
/// Internal to the SIP service (net/sip/sip_service*.cpp): the state its sofia-sip thread owns
/// and the call it keeps per dialog. Not for other modules: it includes sofia's headers with
/// the application's magic types set, which every translation unit that sees `impl` must share.
///
/// The service is split by concept, all on the sofia thread unless said otherwise:
///   sip_service.cpp     the agent: sofia's event loop, its transports, start/stop, event dispatch
///   sip_call_setup.cpp  a new INVITE: body and offer checks, registration, RTP ports, channels
///   sip_dialog.cpp      an established dialog: re-INVITE, UPDATE, SIPREC updates, answer, timeouts, the end
///   sip_headers.cpp     reading sofia's parsed headers (Content-Type, From/To, Warning)

// sofia-sip lets the application name the types its callbacks carry.
#define NUA_MAGIC_T ::sluice::net::sip::sip_service::impl
#define SU_ROOT_MAGIC_T ::sluice::net::sip::sip_service::impl

#include "net/sip/sip_service.hpp"

#include <sofia-sip/nua.h>
#include <sofia-sip/nua_tag.h>
#include <sofia-sip/sip_status.h>
#include <sofia-sip/sip_tag.h>
#include <sofia-sip/su.h>
#include <sofia-sip/su_tag.h>
#include <sofia-sip/su_wait.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "net/sip/channel_bridge.hpp"
#include "net/sip/rtp_receiver.hpp"
#include "net/sip/sdp_offer.hpp"
#include "net/sip/sip_headers.hpp"
#include "net/sip/siprec_metadata.hpp"
#include "net/source_filter.hpp"

namespace sluice::net::sip {

// One pass of sofia's loop waits at most this long, so commands posted from other threads
// (channel opened, stop) wait at most this long too.
inline constexpr long loop_step_ms = 20;
inline constexpr auto periodic_check = std::chrono::seconds(1);
inline constexpr auto stop_grace = std::chrono::seconds(3);
// m= lines per offer: a SIPREC recorder sends two (one per party); more is not a call.
inline constexpr std::size_t max_streams_per_call = 8;
inline constexpr int sip_busy_everywhere = 503;

/// One dialog from its INVITE to its end; owned by the sofia thread.
struct sip_call {
  uint64_t key = 0;
  nua_handle_t* nh = nullptr;
  calls::call_id id;
  sdp_offer offer;
  std::vector<std::shared_ptr<rtp_receiver>> rtp;
  std::vector<caf::actor> bridges;
  std::shared_ptr<call_completion> completion;
  int opens_pending = 0;
  std::string open_error;
  bool answered = false, refused = false;
  // Our Contact in the responses, when sofia's would be wrong for the peer: an INVITE with a
  // sip: Request-URI over TLS gets <sip:...;transport=tls> (RFC 3261 12.1.1 wants sips: only for
  // a sips: request), where sofia writes sips:, to which phones such as baresip cannot send
  // their ACK. Empty: sofia's.
  std::string contact;
  std::optional<int64_t> answer_at_ms;
  uint64_t session_id = 0, session_version = 1;
  std::string answer;
  // The INVITE came over SIP over TLS: SDES keys may be taken (and in its re-INVITEs).
  bool over_tls = false;
  int64_t started_ms = 0;
  std::string end_reason;
};

struct sip_service::impl {
  config::sip_config cfg;
  actors::engine* engine = nullptr;
  std::shared_ptr<calls::call_registry> registry;
  std::shared_ptr<port_pool> pool;
  source_filter allowed;  // sip.allowed_sources
  tenant_sources tenants;  // sip.tenant_sources (sip.tenant for the rest: cfg.tenant)
  // What offers may be taken (sip.srtp, sip.srtp_plain_signalling) for a dialog over TLS or not.
  offer_policy policy(bool over_tls) const {
    offer_policy p;
    p.srtp = cfg.srtp == "off" ? srtp_mode::off : cfg.srtp == "require" ? srtp_mode::require : srtp_mode::allow;
    p.keys_allowed = over_tls || cfg.srtp_plain_signalling;
    return p;
  }
  boost::asio::io_context ioc;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  std::thread io_thread, sip_thread;
  su_root_t* root = nullptr;
  nua_t* nua = nullptr;
  std::atomic<bool> stop_requested{false}, stopped{false};
  // What /metrics reads (sip_service::figures_source), which may outlive the service.
  struct counters_t {
    std::atomic<int64_t> live{0}, calls{0}, refused_source{0}, refused_busy{0}, refused_offer{0}, refused_request{0},
        srtp_streams{0}, srtp_auth_failed{0}, srtp_replayed{0};
  };
  std::shared_ptr<counters_t> counters = std::make_shared<counters_t>();
  // Work for the sofia thread from other threads. Shared, so that a bridge actor that answers
  // after the service is gone posts into a queue nobody runs rather than into freed memory.
  struct command_queue {
    std::mutex mu;
    std::deque<std::function<void(impl&)>> items;
  };
  std::shared_ptr<command_queue> commands = std::make_shared<command_queue>();
  // Sofia thread only:
  std::map<uint64_t, std::shared_ptr<sip_call>> calls;
  std::map<nua_handle_t*, uint64_t> by_handle;
  uint64_t next_key = 1;
  bool shutdown_done = false;

  static void post(const std::shared_ptr<command_queue>& q, std::function<void(impl&)> f) {
    std::lock_guard lock(q->mu);
    q->items.push_back(std::move(f));
  }
  void run_commands() {
    std::deque<std::function<void(impl&)>> now;
    {
      std::lock_guard lock(commands->mu);
      now.swap(commands->items);
    }
    for (auto& f : now) f(*this);
  }

  result<void> loop(std::promise<result<void>>& started);
  void on_event(nua_event_t event, int status, const char* phrase, nua_handle_t* nh, const sip_t* sip, tagi_t tags[]);
  void on_invite(nua_handle_t* nh, const sip_t* sip);
  void enable_rtcp(rtp_receiver& r, const offered_stream& s, calls::call_id id);
  void on_reinvite(sip_call& c, const sip_t* sip);
  void on_update(sip_call& c, const sip_t* sip);
  /// A new offer (or none) inside the dialog, by re-INVITE or UPDATE (`method`).
  void on_session_change(sip_call& c, const sip_t* sip, const char* method);
  void apply_siprec_update(sip_call& c, const siprec_metadata& m);
  void on_channel_open(uint64_t key, bool ok, const std::string& reason);
  void answer(sip_call& c);
  void terminated(nua_handle_t* nh, const std::string& reason);
  void check_calls();
  std::shared_ptr<sip_call> find(nua_handle_t* nh) {
    auto it = by_handle.find(nh);
    if (it == by_handle.end()) return nullptr;
    auto c = calls.find(it->second);
    return c == calls.end() ? nullptr : c->second;
  }
  void refuse_503(nua_handle_t* nh, const char* phrase) {
    ++counters->refused_busy;
    const auto retry = std::to_string(cfg.retry_after_s);
    nua_respond(nh, sip_busy_everywhere, phrase, SIPTAG_RETRY_AFTER_STR(retry.c_str()), TAG_END());
  }
};

}  // namespace sluice::net::sip
