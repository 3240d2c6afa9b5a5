#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [calls]: every ingested source as a call (net/calls/): how many are kept in memory, whether
/// they are stored in SQLite to survive a restart, the live-event subscribers' bound, and the
/// optional webhook POSTed when a call ends.
struct calls_config {
  /// Ended calls kept in memory (the oldest go first); live calls are always kept.
  int max_recent = 1000;
  /// Events queued for one /v1/events subscriber before it is dropped as too slow.
  int subscriber_queue = 1024;
  /// Events (DTMF, switch events, metadata changes) kept per call; a sender cannot grow a live
  /// call without bound. Past it an event is counted in the call's events_dropped, not kept.
  int max_events_per_call = 10000;
  /// Store calls (their start, finals, events and end) in SQLite so they survive a restart.
  bool store = false;
  /// Directory of the engine's files (created when missing).
  std::string data_dir = "data";
  /// The SQLite file; relative to data_dir unless absolute.
  std::string store_file = "calls.sqlite";
  /// Writes queued for the store's thread; past it a write is dropped and counted.
  int store_queue = 65536;
  /// http[s]://host[:port]/path POSTed the whole call as JSON when it ends; empty: no webhook.
  std::string webhook_url;
  /// https: a PEM file of the CAs trusted to sign the webhook server's certificate; empty: the
  /// system's (ca-certificates).
  std::string webhook_ca_file;
  /// https: a PEM certificate (chain) and its private key that sluice presents when the
  /// webhook server asks for a client certificate (mutual TLS); both or neither.
  std::string webhook_cert_file;
  std::string webhook_key_file;
  /// A file whose content (trailing whitespace removed) is the HMAC-SHA256 key of each POST's
  /// X-Sluice-Signature header; empty: no signature.
  std::string webhook_secret_file;
  /// At stop, calls still queued for the webhook are posted for up to this long (ms); 0: not.
  int webhook_drain_ms = 5000;
  /// Each webhook attempt (connect, send, answer) must finish within this (ms).
  int webhook_timeout_ms = 5000;
  /// Attempts after the first failed one (a non-2xx answer, a refused or timed-out connection).
  int webhook_retries = 3;
  /// Wait before the first retry (ms); doubled for each further retry.
  int webhook_backoff_ms = 500;
  /// Ended calls waiting for the webhook; past it a call is not posted and is counted.
  int webhook_queue = 1024;

  template <class V>
  void visit(V&& v) {
    v("max_recent", max_recent, range{0, 10000000}, "ended calls kept in memory");
    v("subscriber_queue", subscriber_queue, range{1, 10000000},
      "events queued per /v1/events subscriber before it is dropped");
    v("max_events_per_call", max_events_per_call, range{1, 10000000},
      "events kept per call; later ones are counted (events_dropped), not kept");
    v("store", store, any_bool{}, "store calls in SQLite (they survive a restart)");
    v("data_dir", data_dir, non_empty{}, "directory of the engine's files");
    v("store_file", store_file, non_empty{}, "SQLite file of the calls (relative to data_dir unless absolute)");
    v("store_queue", store_queue, range{1, 100000000}, "writes queued for the store before one is dropped");
    v("webhook_url", webhook_url, any_string{}, "http:// or https:// URL POSTed each call when it ends; empty: none");
    v("webhook_ca_file", webhook_ca_file, any_string{}, "PEM file of the CAs trusted for an https webhook; empty: the system's");
    v("webhook_cert_file", webhook_cert_file, any_string{},
      "PEM client certificate (chain) for an https webhook that asks for one (mutual TLS); empty: none");
    v("webhook_key_file", webhook_key_file, any_string{}, "PEM private key of webhook_cert_file");
    v("webhook_secret_file", webhook_secret_file, any_string{},
      "file holding the HMAC-SHA256 key of the X-Sluice-Signature header; empty: unsigned");
    v("webhook_drain_ms", webhook_drain_ms, range{0, 600000}, "at stop, how long queued calls are still posted (ms)");
    v("webhook_timeout_ms", webhook_timeout_ms, range{1, 600000}, "time limit of one webhook attempt (ms)");
    v("webhook_retries", webhook_retries, range{0, 100}, "webhook attempts after the first failed one");
    v("webhook_backoff_ms", webhook_backoff_ms, range{0, 3600000}, "wait before the first retry (ms), doubled each retry");
    v("webhook_queue", webhook_queue, range{1, 10000000}, "ended calls waiting for the webhook");
  }
  std::string check() const {
    const bool https = webhook_url.rfind("https://", 0) == 0;
    if (!webhook_url.empty() && webhook_url.rfind("http://", 0) != 0 && !https)
      return "webhook_url must start with http:// or https:// (got \"" + webhook_url + "\")";
    if (!webhook_ca_file.empty() && !https) return "webhook_ca_file is set but webhook_url is not https://";
    if (webhook_cert_file.empty() != webhook_key_file.empty())
      return "webhook_cert_file and webhook_key_file go together: set both or neither";
    if (!webhook_cert_file.empty() && !https) return "webhook_cert_file is set but webhook_url is not https://";
    if (!webhook_secret_file.empty() && webhook_url.empty()) return "webhook_secret_file is set but webhook_url is empty";
    return {};
  }
};

}  // namespace sluice::config
