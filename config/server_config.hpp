#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [server]: `sluice serve` (net/): where it listens and the limits every client is held to.
struct server_config {
  std::string host = "127.0.0.1";
  int port = 8080;
  /// Network I/O threads (the actors have their own).
  int io_threads = 2;
  /// Open connections at once (HTTP and WebSocket); past it new ones get 503 and are closed.
  int max_connections = 1024;
  /// Largest WebSocket message (bytes); a bigger one closes the stream with 1009.
  int max_message_bytes = 1 << 20;
  /// Largest HTTP request body (bytes): uploads to /v1/transcribe.
  int max_body_bytes = 64 << 20;
  /// A connection that sends nothing for this long is closed (s).
  int idle_timeout_s = 30;
  /// Longest WebSocket stream (s); then it is ended like a client end.
  int max_session_s = 4 * 3600;
  /// Flow control of WebSocket audio (net/ws_session.hpp): when the audio a stream has sent
  /// that the recognizer has not finished with (in the server's hands: in flight to its
  /// channel, queued for the model) reaches this many ms, the server stops reading that
  /// connection, so TCP holds a client that sends faster than real time back; it reads again
  /// once the backlog is down to half of it. At least twice the model's attention chunk with its
  /// look-ahead (the default model: 700 ms): below that a paused stream could wait for audio
  /// it has not been allowed to send.
  int ws_max_buffered_audio_ms = 5000;
  /// A connection held back this long in one go (the engine consumed too little of its backlog)
  /// is closed with 1013 and an "overloaded" error (s). Also bounds how late a paused reader
  /// sees a ping or a close frame: keep it below clients' ping timeouts.
  int ws_max_pause_s = 15;
  /// Calls from switches (WebSocket forks, AudioSocket; net/switches/call_channels.hpp) send in
  /// real time and are not flow-controlled: their audio may arrive at most this many times
  /// faster than real time, sustained, after a saved-up burst of switch_burst_s seconds of audio
  /// (what a switch sends at once after a network stall). A call past it is ended with an error
  /// naming both keys (WebSocket close 1008; AudioSocket error frame), before its excess reaches
  /// the engine. 0: no limit.
  double switch_max_speed = 2.0;
  int switch_burst_s = 10;
  /// Host header names accepted besides the loopback names (localhost, 127.x.x.x, ::1) and
  /// the bound address (any IP address when bound to 0.0.0.0 or ::); comma-separated, "*" for
  /// any. Other names get 403: a page on another domain resolving to this server (DNS
  /// rebinding) cannot use it.
  std::string allowed_hosts;
  /// Browser Origins accepted besides pages served from the host the request was sent to
  /// (and loopback pages, for a loopback server); comma-separated, e.g.
  /// "https://ops.example.com", "*" for any. Requests without an Origin (not from a browser)
  /// are not affected; others get 403.
  std::string allowed_origins;
  /// TLS (https and wss on the same port; net/tls_context.hpp): the certificate chain and its
  /// private key, PEM files. Both empty: plain HTTP/WebSocket. Set: TLS only (a plain client
  /// gets one plain 400 naming https, then the connection closes).
  std::string tls_cert_file;
  std::string tls_key_file;
  /// Lowest TLS version accepted: "1.2" or "1.3".
  std::string tls_min_version = "1.2";
  /// Every this many seconds the certificate and key files are checked for a change (mtime,
  /// size) and reloaded for new connections; 0: only on SIGHUP (`sluice serve`).
  int tls_reload_check_s = 60;
  /// glibc malloc of `sluice serve` (mallopt, set before any thread starts). Every thread that
  /// allocates gets an arena of its own, up to 8 per core, and each keeps the pages freed into it;
  /// glibc also raises its mmap threshold after each large free, so the per-stream buffers that
  /// were mmap'd (and handed back on free) end up in the arenas. Over a 1-hour soak RSS crept up
  /// in steps of a few MiB while the heap in use stayed flat (README, issue 9). At most this many
  /// arenas (0: glibc's default).
  int malloc_arena_max = 2;
  /// Allocations of at least this many KiB are mmap'd and handed back to the kernel when freed,
  /// at a fixed threshold (0: glibc's default, which moves up to 32 MiB). The cost: each such
  /// allocation is an mmap/munmap with fresh zeroed pages, so a buffer of that size made and
  /// freed per step would fault its pages in every time; the engine's step buffers are reused
  /// (and with engine.preallocate sized at start), so what crosses it is mostly per-stream and
  /// per-upload memory. Not measured apart from the arena limit (README, soak).
  int malloc_mmap_threshold_kb = 256;

  template <class V>
  void visit(V&& v) {
    v("host", host, non_empty{}, "address to listen on");
    v("port", port, range{0, 65535}, "TCP port (0: any free port)");
    v("io_threads", io_threads, range{1, 64}, "network I/O threads");
    v("max_connections", max_connections, range{1, 1000000}, "open connections at once");
    v("max_message_bytes", max_message_bytes, range{1024, 1 << 30}, "largest WebSocket message (bytes)");
    v("max_body_bytes", max_body_bytes, range{1024, 1 << 30}, "largest HTTP request body (bytes)");
    v("idle_timeout_s", idle_timeout_s, range{1, 86400}, "close a connection idle this long (s)");
    v("max_session_s", max_session_s, range{1, 7 * 86400}, "longest WebSocket stream (s)");
    v("ws_max_buffered_audio_ms", ws_max_buffered_audio_ms, range{2000, 3600000},
      "stop reading a WebSocket stream whose audio not yet recognized reaches this (ms); read again at half of it");
    v("ws_max_pause_s", ws_max_pause_s, range{1, 3600},
      "close (1013) a WebSocket stream whose reads stayed paused this long (s)");
    v("switch_max_speed", switch_max_speed, range{0, 1000},
      "end a switch call whose audio arrives faster than this many times real time, sustained (0: no limit)");
    v("switch_burst_s", switch_burst_s, range{1, 3600},
      "seconds of audio a switch call may send at once above switch_max_speed (after a stall)");
    v("allowed_hosts", allowed_hosts, name_list{},
      "Host names accepted besides loopback and the bound address (comma-separated; * = any)");
    v("allowed_origins", allowed_origins, name_list{},
      "browser Origins accepted besides same-host pages (comma-separated, e.g. https://ops.example.com; * = any)");
    v("tls_cert_file", tls_cert_file, any_string{}, "TLS certificate chain (PEM); empty: no TLS");
    v("tls_key_file", tls_key_file, any_string{}, "TLS private key (PEM) of tls_cert_file");
    v("tls_min_version", tls_min_version, one_of{{"1.2", "1.3"}}, "lowest TLS version accepted");
    v("tls_reload_check_s", tls_reload_check_s, range{0, 86400},
      "check the TLS files for a change this often (s) and reload them; 0: only on SIGHUP");
    v("malloc_arena_max", malloc_arena_max, range{0, 1024},
      "glibc malloc arenas at most (sluice serve; 0: glibc's default, 8 per core)");
    v("malloc_mmap_threshold_kb", malloc_mmap_threshold_kb, range{0, 32 * 1024},
      "allocations of at least this many KiB are mmap'd and returned on free (sluice serve; 0: glibc's moving threshold)");
  }
  std::string check() const {
    if (switch_max_speed > 0 && switch_max_speed < 1)
      return "server.switch_max_speed must be 0 (no limit) or at least 1 (real time): a switch sends in real time";
    if (tls_cert_file.empty() != tls_key_file.empty())
      return "server.tls_cert_file and server.tls_key_file must be set together (or both empty for no TLS)";
    return {};
  }
};

}  // namespace sluice::config
