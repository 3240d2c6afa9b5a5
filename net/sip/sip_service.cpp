// The agent: sofia-sip's event loop on its own thread, its transports (the NUA URL), start and
// stop, and the dispatch of sofia's events to the call setup and dialog code.
#include "net/sip/sip_service_impl.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sofia-sip/tport_tag.h>
#include <spdlog/spdlog.h>


namespace sluice::net::sip {

namespace asio = boost::asio;

namespace {

result<std::string> read_pem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(errc::io, std::string("sip: cannot read ") + what + " " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto text = ss.str();
  if (text.find("-----BEGIN ") == std::string::npos)
    return fail(errc::invalid_config, std::string("sip: ") + what + " " + path + " is not PEM");
  return text;
}

// sofia-sip reads its TLS identity from a directory: agent.pem (private key, then certificate
// chain) and cafile.pem (the CAs it trusts). It is made here, private to this process's user,
// from sip.tls_cert_file and sip.tls_key_file, and removed once the transports are up, so the
// key is on disk only where the operator put it.
class tls_identity_dir {
 public:
  static result<std::unique_ptr<tls_identity_dir>> make(const config::sip_config& cfg) {
    auto cert = read_pem(cfg.tls_cert_file, "sip.tls_cert_file");
    if (!cert) return tl::unexpected(cert.error());
    auto key = read_pem(cfg.tls_key_file, "sip.tls_key_file");
    if (!key) return tl::unexpected(key.error());
    std::string tmpl = (std::filesystem::temp_directory_path() / "sluice-sip-tls-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return fail(errc::io, "sip: cannot make a private directory for the TLS identity");
    std::unique_ptr<tls_identity_dir> d(new tls_identity_dir(tmpl));
    const auto old_mask = ::umask(077);
    {
      std::ofstream agent(tmpl + "/agent.pem", std::ios::binary);
      agent << *key;
      if (!key->empty() && key->back() != '\n') agent << '\n';
      agent << *cert;
      std::ofstream ca(tmpl + "/cafile.pem", std::ios::binary);
      ca << *cert;
    }
    ::umask(old_mask);
    return d;
  }
  ~tls_identity_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit tls_identity_dir(std::string p) : path_(std::move(p)) {}
  std::string path_;
};

void event_callback(nua_event_t event, int status, char const* phrase, nua_t*, sip_service::impl* self,
                    nua_handle_t* nh, nua_hmagic_t*, sip_t const* sip, tagi_t tags[]) {
  // Nothing may unwind through sofia's C frames.
  try {
    self->on_event(event, status, phrase, nh, sip, tags);
  } catch (const std::exception& e) {
    spdlog::error("sip: handling {} threw: {}", nua_event_name(event), e.what());
  } catch (...) {
    spdlog::error("sip: handling {} threw", nua_event_name(event));
  }
}
}  // namespace

void sip_service::impl::on_event(nua_event_t event, int status, const char* phrase, nua_handle_t* nh,
                                 const sip_t* sip, tagi_t tags[]) {
  switch (event) {
    case nua_i_invite: {
      if (auto c = find(nh)) on_reinvite(*c, sip);
      else on_invite(nh, sip);
      return;
    }
    case nua_i_update:
      if (auto c = find(nh)) on_update(*c, sip);
      else nua_respond(nh, SIP_481_NO_TRANSACTION, NUTAG_WITH_THIS(nua), TAG_END());
      return;
    case nua_i_cancel:
      if (auto c = find(nh)) c->end_reason = "cancelled";
      return;
    case nua_i_bye:
      if (auto c = find(nh)) c->end_reason = "hangup";
      return;
    case nua_i_state: {
      int state = -1;
      tl_gets(tags, NUTAG_CALLSTATE_REF(state), TAG_END());
      if (state == nua_callstate_terminated) terminated(nh, status >= 300 ? std::to_string(status) + " " + (phrase ? phrase : "") : "");
      return;
    }
    case nua_r_shutdown:
      if (status >= 200) shutdown_done = true;
      return;
    default:
      return;
  }
}

result<void> sip_service::impl::loop(std::promise<result<void>>& started) {
  su_init();
  root = su_root_create(this);
  if (!root) {
    started.set_value(fail(errc::internal, "sip: sofia-sip could not create its event loop"));
    su_deinit();
    return {};
  }
  const bool v6 = cfg.host.find(':') != std::string::npos;
  std::string url = "sip:" + (v6 ? "[" + cfg.host + "]" : cfg.host) + ":" + std::to_string(cfg.port);
  if (cfg.udp != cfg.tcp) url += cfg.udp ? ";transport=udp" : ";transport=tcp";
  std::unique_ptr<tls_identity_dir> identity;
  std::string sips_url;
  if (cfg.tls) {
    auto d = tls_identity_dir::make(cfg);
    if (!d) {
      started.set_value(tl::unexpected(d.error()));
      su_root_destroy(root);
      su_deinit();
      return {};
    }
    identity = std::move(*d);
    sips_url = "sips:" + (v6 ? "[" + cfg.host + "]" : cfg.host) + ":" + std::to_string(cfg.tls_port);
  }
  nua = nua_create(root, event_callback, this, NUTAG_URL(url.c_str()),
                   TAG_IF(cfg.tls, NUTAG_SIPS_URL(sips_url.c_str())),
                   TAG_IF(cfg.tls, TPTAG_CERTIFICATE(identity ? identity->path().c_str() : "")),
                   NUTAG_MEDIA_ENABLE(0), NUTAG_AUTOALERT(0),
                   SIPTAG_USER_AGENT_STR("sluice"), SIPTAG_SERVER_STR("sluice"),
                   // sofia's own extensions plus SIPREC: recorders send Require: siprec (RFC 7866
                   // 6.1.1), which sofia answers 420 Bad Extension unless it is listed here.
                   SIPTAG_SUPPORTED_STR("timer, 100rel, siprec"),
                   // With media off, sofia answers an UPDATE itself, 200 without SDP, before the
                   // application hears of it; RFC 3311 5.2 wants the answer to its offer in the
                   // 2xx, and a SIPREC metadata update wants reading first: we respond.
                   NUTAG_APPL_METHOD("UPDATE"), TAG_NULL());
  identity.reset();  // sofia has read it
  if (!nua) {
    started.set_value(fail(errc::io, "sip: cannot listen on " + url + (cfg.tls ? " and " + sips_url : std::string()) +
                                         (cfg.tls ? " (or the TLS certificate and key are not a usable pair)" : "")));
    su_root_destroy(root);
    su_deinit();
    return {};
  }
  started.set_value(result<void>{});
  auto next_check = std::chrono::steady_clock::now() + periodic_check;
  while (!stop_requested) {
    su_root_step(root, loop_step_ms);
    run_commands();
    // Answers due (answer_delay_ms) are checked every step; timeouts once a second.
    const auto now = std::chrono::steady_clock::now();
    bool due = false;
    for (auto& [k, c] : calls) due = due || (c->answer_at_ms && steady_ms() >= *c->answer_at_ms);
    if (due || now >= next_check) {
      check_calls();
      if (now >= next_check) next_check = now + periodic_check;
    }
  }
  // Stop: hang up answered calls, refuse ringing ones, then shut the stack down.
  for (auto& [k, c] : calls) {
    if (!c->end_reason.empty()) continue;
    c->end_reason = "server stopping";
    if (c->answered) nua_bye(c->nh, TAG_END());
    else refuse_503(c->nh, "Shutting down");
  }
  const auto deadline = std::chrono::steady_clock::now() + stop_grace;
  while (!calls.empty() && std::chrono::steady_clock::now() < deadline) {
    su_root_step(root, loop_step_ms);
    run_commands();
  }
  // Calls whose peer never answered our BYE: end them here.
  while (!calls.empty()) terminated(calls.begin()->second->nh, "");
  nua_shutdown(nua);
  const auto shutdown_deadline = std::chrono::steady_clock::now() + stop_grace;
  while (!shutdown_done && std::chrono::steady_clock::now() < shutdown_deadline) su_root_step(root, loop_step_ms);
  nua_destroy(nua);
  su_root_destroy(root);
  su_deinit();
  return {};
}

result<std::unique_ptr<sip_service>> sip_service::start(actors::engine& engine,
                                                         std::shared_ptr<calls::call_registry> calls,
                                                         const config::sip_config& cfg) {
  boost::system::error_code ec;
  const auto host = asio::ip::make_address(cfg.host, ec);
  if (ec) return fail(errc::invalid_config, "sip.host = \"" + cfg.host + "\" is not an IP address");
  auto admission = source_admission::parse("sip", cfg.allowed_sources, cfg.tenant_sources, cfg.tenant);
  if (!admission) return tl::unexpected(admission.error());
  if (!host.is_loopback() && admission->allowed.empty() && !cfg.allow_public)
    return fail(errc::invalid_config, "sip.host = \"" + cfg.host +
                                          "\" is not a loopback address and SIP has no caller authentication: set "
                                          "sip.allowed_sources to your PBX or SBC addresses (or networks), or "
                                          "sip.allow_public = true to take calls from anyone");
  std::unique_ptr<sip_service> s(new sip_service());
  s->impl_ = std::make_unique<impl>();
  auto& m = *s->impl_;
  m.cfg = cfg;
  m.engine = &engine;
  m.registry = std::move(calls);
  m.pool = std::make_shared<port_pool>(cfg.rtp_port_min, cfg.rtp_port_max);
  m.allowed = std::move(admission->allowed);
  m.tenants = std::move(admission->tenants);
  m.work.emplace(m.ioc.get_executor());
  m.io_thread = std::thread([&m] {
    for (;;) {
      try {
        m.ioc.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("sip: an RTP handler threw: {}; serving on", e.what());
      }
    }
  });
  // Shared: the loop may still be inside set_value when start() returns.
  auto started = std::make_shared<std::promise<result<void>>>();
  auto ready = started->get_future();
  m.sip_thread = std::thread([&m, started] { (void)m.loop(*started); });
  auto r = ready.get();
  if (!r) {
    m.sip_thread.join();
    m.work.reset();
    m.ioc.stop();
    m.io_thread.join();
    m.stopped = true;
    return tl::unexpected(r.error());
  }
  spdlog::info("sip: listening on {}:{} ({}{}{})", cfg.host, cfg.port, cfg.udp ? "udp" : "", cfg.udp && cfg.tcp ? "+" : "",
               cfg.tcp ? "tcp" : "");
  return s;
}

uint16_t sip_service::port() const { return static_cast<uint16_t>(impl_->cfg.port); }
int sip_service::live_calls() const { return static_cast<int>(impl_->counters->live); }

std::function<sip_figures()> sip_service::figures_source() const {
  return [c = impl_->counters] {
    sip_figures f;
    f.live = c->live;
    f.calls = c->calls;
    f.refused_source = c->refused_source;
    f.refused_busy = c->refused_busy;
    f.refused_offer = c->refused_offer;
    f.refused_request = c->refused_request;
    f.srtp_streams = c->srtp_streams;
    f.srtp_auth_failed = c->srtp_auth_failed;
    f.srtp_replayed = c->srtp_replayed;
    return f;
  };
}

void sip_service::stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
  impl_->stop_requested = true;
  if (impl_->sip_thread.joinable()) impl_->sip_thread.join();
  // Every receiver was stopped by its call's end; what remains on the io_context are their
  // last deliveries.
  impl_->work.reset();
  const auto deadline = std::chrono::steady_clock::now() + stop_grace;
  while (!impl_->ioc.stopped() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(loop_step_ms));
  impl_->ioc.stop();
  if (impl_->io_thread.joinable()) impl_->io_thread.join();
}

sip_service::~sip_service() { stop(); }

}  // namespace sluice::net::sip
