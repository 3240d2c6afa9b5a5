#include "net/prometheus.hpp"

#include <cctype>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace sluice::net {

namespace {

// Metric names: [a-zA-Z_:][a-zA-Z0-9_:]*.
std::string metric_name(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

// Label values: backslash, quote and newline escaped.
std::string label_value(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// "first_partial_ms" -> "first_partial".
std::string latency_base(const std::string& key) {
  std::string base = key;
  if (base.size() > 3 && base.compare(base.size() - 3, 3, "_ms") == 0) base.resize(base.size() - 3);
  return metric_name(base);
}

// One histogram's series (the family's HELP and TYPE written by the caller); `labels` are put
// before `le` ("tenant=\"acme\"," or empty).
void write_histogram(std::ostream& o, const std::string& name, const std::string& labels, const nlohmann::json& h) {
  const auto& bounds = h["buckets_ms"];
  const auto& counts = h["counts"];
  double cum = 0;
  for (std::size_t b = 0; b < bounds.size() && b < counts.size(); ++b) {
    cum += counts[b].get<double>();
    o << name << "_bucket{" << labels << "le=\"" << num(bounds[b].get<double>()) << "\"} " << num(cum) << "\n";
  }
  const std::string own = labels.empty() ? "" : "{" + labels.substr(0, labels.size() - 1) + "}";
  o << name << "_bucket{" << labels << "le=\"+Inf\"} " << num(h["count"].get<double>()) << "\n";
  o << name << "_sum" << own << " " << num(h.value("sum_ms", 0.0)) << "\n";
  o << name << "_count" << own << " " << num(h["count"].get<double>()) << "\n";
}

}  // namespace

std::string to_prometheus(const std::string& snapshot_json) {
  std::ostringstream o;
  auto j = nlohmann::json::parse(snapshot_json, nullptr, false);
  o << "# HELP sluice_up 1 when the engine answered the metrics request.\n# TYPE sluice_up gauge\n";
  if (j.is_discarded() || !j.is_object()) {
    o << "sluice_up 0\n";
    return o.str();
  }
  o << "sluice_up 1\n";
  o << "# HELP sluice_uptime_seconds Seconds since the metrics actor started.\n# TYPE sluice_uptime_seconds gauge\n"
    << "sluice_uptime_seconds " << num(j.value("uptime_s", 0.0)) << "\n";

  // Counters summed per kind: sluice_<kind>_<counter>_total. Per-expert pair counts become one
  // family with layer/expert labels.
  for (auto& [kind, k] : j["kinds"].items()) {
    std::map<std::string, std::vector<std::pair<std::string, double>>> families;
    for (auto& [key, v] : k["counters"].items()) {
      if (key.rfind("pairs/", 0) == 0) {
        const auto a = key.find('/', 6);
        families["sluice_" + metric_name(kind) + "_expert_pairs_total"].push_back(
            {"layer=\"" + key.substr(6, a - 6) + "\",expert=\"" + key.substr(a + 1) + "\"", v.get<double>()});
        continue;
      }
      families["sluice_" + metric_name(kind) + "_" + metric_name(key) + "_total"].push_back({"", v.get<double>()});
    }
    for (auto& [name, rows] : families) {
      o << "# TYPE " << name << " counter\n";
      for (auto& [labels, v] : rows) o << name << (labels.empty() ? "" : "{" + labels + "}") << " " << num(v) << "\n";
    }
    const std::string live = "sluice_" + metric_name(kind) + "_actors";
    o << "# TYPE " << live << " gauge\n" << live << " " << num(k.value("live", 0.0)) << "\n";
    for (auto& [key, h] : k["latency"].items()) {
      const std::string name = "sluice_" + metric_name(kind) + "_" + latency_base(key) + "_milliseconds";
      o << "# HELP " << name << " Latency histogram (ms).\n# TYPE " << name << " histogram\n";
      write_histogram(o, name, "", h);
    }
  }
  // Per actor: mailbox depth, busy share, messages/s, and its gauges.
  std::map<std::string, std::vector<std::string>> per_actor;
  for (const auto& a : j["actors"]) {
    const std::string labels = "{actor=\"" + label_value(a["name"].get<std::string>()) + "\",kind=\"" +
                               label_value(a["kind"].get<std::string>()) + "\"}";
    per_actor["sluice_actor_mailbox_depth"].push_back(labels + " " + num(a["mailbox"].get<double>()));
    per_actor["sluice_actor_busy_ratio"].push_back(labels + " " + num(a["busy"].get<double>()));
    per_actor["sluice_actor_messages_per_second"].push_back(labels + " " + num(a["messages_per_s"].get<double>()));
    for (auto& [key, v] : a["gauges"].items()) {
      // "name/<i>" (one per lane, say): one family `name` with the index as a label.
      if (const auto slash = key.find('/'); slash != std::string::npos) {
        per_actor["sluice_actor_" + metric_name(key.substr(0, slash))].push_back(
            labels.substr(0, labels.size() - 1) + ",index=\"" + label_value(key.substr(slash + 1)) + "\"} " +
            num(v.get<double>()));
        continue;
      }
      per_actor["sluice_actor_" + metric_name(key)].push_back(labels + " " + num(v.get<double>()));
    }
  }
  for (auto& [name, rows] : per_actor) {
    o << "# TYPE " << name << " gauge\n";
    for (auto& r : rows) o << name << r << "\n";
  }
  // Per tenant (its streams only): live channels, counters, latencies; one family each with a
  // tenant label.
  if (const auto t = j.find("tenants"); t != j.end() && t->is_object() && !t->empty()) {
    o << "# HELP sluice_tenant_channels A tenant's live channels.\n# TYPE sluice_tenant_channels gauge\n";
    std::map<std::string, std::vector<std::string>> counters;
    std::map<std::string, std::vector<std::pair<std::string, const nlohmann::json*>>> latencies;
    for (auto& [tenant, totals] : t->items()) {
      const std::string label = "tenant=\"" + label_value(tenant) + "\"";
      o << "sluice_tenant_channels{" << label << "} " << num(totals.value("live", 0.0)) << "\n";
      for (auto& [key, v] : totals["counters"].items())
        counters["sluice_tenant_" + metric_name(key) + "_total"].push_back("{" + label + "} " + num(v.get<double>()));
      for (auto& [key, h] : totals["latency"].items())
        latencies["sluice_tenant_" + latency_base(key) + "_milliseconds"].push_back({label + ",", &h});
    }
    for (auto& [name, rows] : counters) {
      o << "# TYPE " << name << " counter\n";
      for (auto& r : rows) o << name << r << "\n";
    }
    for (auto& [name, rows] : latencies) {
      o << "# HELP " << name << " Latency histogram of a tenant's streams (ms).\n# TYPE " << name << " histogram\n";
      for (auto& [labels, h] : rows) write_histogram(o, name, labels, *h);
    }
  }
  // The summary's derived ratios.
  for (auto& [key, v] : j["summary"].items()) {
    if (!v.is_number()) continue;
    const std::string name = "sluice_summary_" + metric_name(key);
    o << "# TYPE " << name << " gauge\n" << name << " " << num(v.get<double>()) << "\n";
  }
  return o.str();
}

namespace {
// One family of one sample, with its HELP and TYPE.
void one_sample(std::ostringstream& o, const char* name, const char* type, const char* help, int64_t v) {
  o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n" << name << " " << v << "\n";
}
// One counter family with a sample per value of `label`.
void counter_by_label(std::ostringstream& o, const char* name, const char* help, const char* label,
                      std::initializer_list<std::pair<const char*, int64_t>> samples) {
  o << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n";
  for (const auto& [value, v] : samples) o << name << "{" << label << "=\"" << value << "\"} " << v << "\n";
}
}  // namespace

std::string server_prometheus(const server_figures& f) {
  std::ostringstream o;
  auto one = [&](const char* name, const char* type, const char* help, int64_t v) { one_sample(o, name, type, help, v); };
  one("sluice_server_connections", "gauge", "Connections open now, on every port.", f.connections);
  one("sluice_server_draining", "gauge", "1 while the server drains before it stops.", f.draining ? 1 : 0);
  one("sluice_ws_streams", "gauge", "WebSocket sessions with an open engine channel.", f.ws_streams);
  one("sluice_ws_read_pauses_total", "counter",
      "Times flow control paused a WebSocket client's reads (server.ws_max_buffered_audio_ms).", f.ws_read_pauses);
  one("sluice_ws_paused_streams", "gauge", "WebSocket streams whose reads are paused now.", f.ws_paused_now);
  one("sluice_ws_buffered_audio_peak_milliseconds", "gauge",
      "The most audio one WebSocket stream has had in the server's hands at once, since the start.",
      f.ws_buffered_audio_peak_ms);
  one("sluice_ws_tls_half_closes_total", "counter",
      "wss streams whose client half-closed with a TLS 1.3 close_notify after its end.", f.ws_tls_half_closes);
  counter_by_label(o, "sluice_audiosocket_refused_total", "AudioSocket connections refused, by reason.", "reason",
                   {{"source", f.audiosocket_refused_source}, {"limit", f.audiosocket_refused_limit}});
  return o.str();
}

std::string sip_prometheus(const sip_figures& f) {
  std::ostringstream o;
  auto one = [&](const char* name, const char* type, const char* help, int64_t v) { one_sample(o, name, type, help, v); };
  one("sluice_sip_active_calls", "gauge", "SIP calls now.", f.live);
  one("sluice_sip_calls_total", "counter", "SIP calls taken.", f.calls);
  counter_by_label(o, "sluice_sip_refused_total",
                   "INVITEs refused, by reason (source 403, busy 503, offer 488, request 400/415).", "reason",
                   {{"source", f.refused_source}, {"busy", f.refused_busy}, {"offer", f.refused_offer},
                    {"request", f.refused_request}});
  one("sluice_sip_srtp_streams_total", "counter", "SIP media streams taken with SRTP.", f.srtp_streams);
  one("sluice_sip_srtp_auth_failures_total", "counter",
      "SRTP/SRTCP packets of ended SIP streams that failed authentication.", f.srtp_auth_failed);
  one("sluice_sip_srtp_replays_total", "counter",
      "SRTP/SRTCP packets of ended SIP streams refused by the replay check.", f.srtp_replayed);
  return o.str();
}

}  // namespace sluice::net
