// sluice serve: the engine behind the HTTP/WebSocket server ([server] host/port), until SIGINT
// or SIGTERM; then new streams are refused and open ones drain (their finals are delivered).
// SIGHUP reloads the TLS certificate and key for new connections and the API keys file for new
// requests (net::server::reload).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "actors/engine.hpp"
#include "net/server.hpp"
#include "net/rtsp/rtsp_auth.hpp"
#include "net/rtsp/rtsp_service.hpp"
#include "net/sip/sip_service.hpp"
#include "tools/sluice/cli.hpp"

namespace sluice::cli {

namespace {
volatile std::sig_atomic_t stop_requested = 0;
volatile std::sig_atomic_t reload_requested = 0;
void on_signal(int) { stop_requested = 1; }
void on_hangup(int) { reload_requested = 1; }
}  // namespace

int cmd_serve(invocation& inv) {
  if (!inv.args.empty()) {
    std::fprintf(stderr, "sluice serve: no arguments (use --server.port=N, --server.host=ADDR)\n");
    return exit_usage;
  }
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // Before the engine's and the server's threads exist, so their arenas are bounded too
  // (config/server_config.hpp says why). Not under ASan/TSan: their allocators replace malloc
  // and answer mallopt with a failure.
  if (inv.cfg.server.malloc_arena_max > 0 && ::mallopt(M_ARENA_MAX, inv.cfg.server.malloc_arena_max) != 1)
    spdlog::warn("mallopt(M_ARENA_MAX, {}) failed", inv.cfg.server.malloc_arena_max);
  if (inv.cfg.server.malloc_mmap_threshold_kb > 0 &&
      ::mallopt(M_MMAP_THRESHOLD, inv.cfg.server.malloc_mmap_threshold_kb * 1024) != 1)
    spdlog::warn("mallopt(M_MMAP_THRESHOLD, {} KiB) failed", inv.cfg.server.malloc_mmap_threshold_kb);
#endif
  auto res = actors::engine_resources::load(inv.cfg);
  if (!res) {
    std::fprintf(stderr, "sluice serve: %s\n", res.error().message.c_str());
    return exit_failure;
  }
  auto eng = actors::engine::start(*res);
  auto srv = net::server::start(*eng, inv.cfg.server, inv.cfg.auth, inv.cfg.listeners, inv.cfg.audiosocket, inv.cfg.calls);
  if (!srv) {
    std::fprintf(stderr, "sluice serve: %s\n", srv.error().message.c_str());
    return exit_failure;
  }
  // [sip]: calls into sluice, registered with the server's calls (GET /v1/calls).
  std::unique_ptr<net::sip::sip_service> sip;
  if (inv.cfg.sip.enabled) {
    auto started = net::sip::sip_service::start(*eng, (*srv)->shared_calls(), inv.cfg.sip);
    if (!started) {
      std::fprintf(stderr, "sluice serve: %s (set --sip.port=N, or --sip.enabled=false)\n",
                   started.error().message.c_str());
      (*srv)->stop();
      return exit_failure;
    }
    sip = std::move(*started);
    // Its figures in /metrics; the source holds the counters, so it outlives the service.
    (*srv)->add_metrics([figures = sip->figures_source()] { return net::sip_prometheus(figures()); });
  }
  // [rtsp]: pushes to rtsp://host:port/<name> and the pulls of rtsp.pull, as calls.
  std::unique_ptr<net::rtsp::rtsp_service> rtsp;
  if (inv.cfg.rtsp.enabled || !inv.cfg.rtsp.pull.empty()) {
    // With API keys, pushes need one too (Basic, the key as password); the server's key store
    // answers, so a key reload applies to RTSP as to every HTTP route.
    std::function<std::optional<net::auth::principal>(std::string_view)> authenticate;
    if (!inv.cfg.auth.keys_file.empty())
      authenticate = [s = srv->get()](std::string_view key) { return s->authenticate_key(key); };
    // Invalid keys count against the client's address on RTSP as over HTTP (one limiter).
    // A key reload that revokes a push's key closes the push, as it ends WebSocket streams.
    auto started = net::rtsp::rtsp_service::start(*eng, (*srv)->shared_calls(), inv.cfg.rtsp, std::move(authenticate),
                                                  (*srv)->auth_failures(), (*srv)->shared_key_streams());
    if (!started) {
      std::fprintf(stderr, "sluice serve: %s (set --rtsp.port=N, or --rtsp.enabled=false)\n",
                   started.error().message.c_str());
      if (sip) sip->stop();
      (*srv)->stop();
      return exit_failure;
    }
    rtsp = std::move(*started);
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGHUP, on_hangup);
  const bool tls = (*srv)->tls();
  const bool keys = !inv.cfg.auth.keys_file.empty();
  const char* ws = tls ? "wss" : "ws";
  const auto url = std::string(tls ? "https" : "http") + "://" + inv.cfg.server.host + ":" + std::to_string((*srv)->port());
  const auto& host = inv.cfg.server.host;
  const auto main_port = static_cast<unsigned>((*srv)->port());
  std::printf("sluice is serving model %s\n  dashboard   %s/\n  stream      %s://%s:%u/v1/stream\n"
              "  transcribe  curl --data-binary @call.wav %s/v1/transcribe\n  metrics     %s/metrics\n",
              inv.cfg.model.dir.c_str(), url.c_str(), ws, host.c_str(), main_port, url.c_str(), url.c_str());
  // Each field protocol: on its own port (any path) when enabled, and on a path of the main port.
  const struct {
    net::ws_listener kind;
    const char* label;
    const char* path;
  } protocols[] = {{net::ws_listener::funasr, "FunASR", "/funasr"},
                   {net::ws_listener::sherpa, "sherpa-onnx", "/sherpa"},
                   {net::ws_listener::vosk, "Vosk", "/vosk"}};
  for (const auto& p : protocols) {
    std::printf("  %-11s %s://%s:%u%s", p.label, ws, host.c_str(), main_port, p.path);
    if (const auto own = (*srv)->port(p.kind)) std::printf("  and %s://%s:%u/", ws, host.c_str(), static_cast<unsigned>(own));
    else std::printf("  (own port disabled: listeners.%s = false)", std::string(net::listener_name(p.kind)).c_str());
    std::printf("\n");
  }
  std::printf("  Deepgram    %s://%s:%u/v1/listen (live), POST %s/v1/listen (files)\n", ws, host.c_str(), main_port,
              url.c_str());
  std::printf("  switches    %s://%s:%u/{audio_fork,jambonz,jambonz/stt,twilio,audiohook}\n", ws,
              inv.cfg.server.host.c_str(), (*srv)->port());
  if ((*srv)->audiosocket_port() != 0)
    std::printf("  AudioSocket tcp %s:%u (Asterisk: AudioSocket(${UUID()},%s:%u))\n", inv.cfg.audiosocket.host.c_str(),
                (*srv)->audiosocket_port(), inv.cfg.audiosocket.host.c_str(), (*srv)->audiosocket_port());
  if (tls)
    std::printf("  tls         %s (reload: kill -HUP %d, or edit the files: checked every %d s)\n",
                inv.cfg.server.tls_cert_file.c_str(), static_cast<int>(::getpid()), inv.cfg.server.tls_reload_check_s);
  if (!inv.cfg.auth.keys_file.empty())
    std::printf("  auth        API keys from %s: send Authorization: Bearer <key> (dashboard: /?token=<key>)\n"
                "              (reload: kill -HUP %d, or edit the file: checked every %d s)\n",
                inv.cfg.auth.keys_file.c_str(), static_cast<int>(::getpid()), inv.cfg.auth.keys_reload_check_s);
  std::printf("  calls       %s/v1/calls   live events %s://%s:%u/v1/events\n", url.c_str(), ws,
              inv.cfg.server.host.c_str(), (*srv)->port());
  if (inv.cfg.calls.store)
    std::printf("  calls store %s\n", net::calls::call_store::path_of(inv.cfg.calls).c_str());
  if (!inv.cfg.calls.webhook_url.empty()) std::printf("  webhook     %s\n", inv.cfg.calls.webhook_url.c_str());
  if (sip)
    std::printf("  sip         sip:sluice@%s:%d (%s%s%s), RTP ports %d-%d\n", inv.cfg.sip.host.c_str(), inv.cfg.sip.port,
                inv.cfg.sip.udp ? "udp" : "", inv.cfg.sip.udp && inv.cfg.sip.tcp ? "+" : "", inv.cfg.sip.tcp ? "tcp" : "",
                inv.cfg.sip.rtp_port_min, inv.cfg.sip.rtp_port_max);
  if (rtsp && rtsp->port() != 0)
    std::printf("  rtsp        rtsp://%s:%u/<name> (push: ffmpeg -re -i call.wav -c:a pcm_mulaw -f rtsp rtsp://%s:%u/call1)\n",
                inv.cfg.rtsp.host.c_str(), static_cast<unsigned>(rtsp->port()), inv.cfg.rtsp.host.c_str(),
                static_cast<unsigned>(rtsp->port()));
  if (rtsp && !inv.cfg.rtsp.pull.empty()) {
    std::string shown;  // the URLs with any password hidden
    for (const auto& u : net::rtsp::rtsp_service::pull_urls(inv.cfg.rtsp.pull))
      shown += (shown.empty() ? "" : ",") + net::rtsp::split_credentials(u).redacted;
    std::printf("  rtsp pull   %s\n", shown.c_str());
  }
  std::fflush(stdout);
  // glibc keeps the memory freed by ended streams in its per-thread arenas: in a 1-hour soak
  // (tools/bench/soak_bench.py) the heap in use stayed at 75 MB while the arenas held 378 MB and
  // RSS crept up 3-4 MB every few minutes. Handing free pages back to the kernel every 30 s
  // (malloc_trim walks every arena; a few ms on this otherwise idle thread) keeps RSS at what
  // the streams use.
  constexpr auto trim_every = std::chrono::seconds(30);
  auto next_trim = std::chrono::steady_clock::now() + trim_every;
  while (!stop_requested) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (std::chrono::steady_clock::now() >= next_trim) {
#if defined(__GLIBC__)
      ::malloc_trim(0);
#endif
      next_trim = std::chrono::steady_clock::now() + trim_every;
    }
    if (reload_requested) {
      reload_requested = 0;
      // The outcome is logged by the server (a failure keeps the old certificate or keys).
      if (tls || keys) (void)(*srv)->reload();
      else spdlog::info("SIGHUP: neither TLS nor API keys configured, nothing to reload");
    }
  }
  spdlog::info("stopping: draining open streams");
  if (rtsp) rtsp->stop();  // as for SIP: its calls end and their channels drain before the engine
  if (sip) sip->stop();  // its calls end (BYE) and their channels get their end before the engine drains
  (*srv)->stop();
  return exit_ok;
}

}  // namespace sluice::cli
