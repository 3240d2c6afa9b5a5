#include "actors/metrics_actor.hpp"

#include <chrono>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "actors/latency_histogram.hpp"
#include "actors/messages.hpp"

namespace sluice::actors {

namespace {

using clock = std::chrono::steady_clock;

struct actor_record {
  std::string kind;
  int64_t mailbox = 0;
  double messages_per_s = 0;
  double busy = 0;  // fraction of the last interval spent in handlers
  int64_t report_steady_ns = 0;  // when the last report was taken (actor_report::taken_ns)
  std::map<std::string, double> counters;  // since the actor started
  std::map<std::string, double> gauges;
  std::string text;
  std::string tenant;  // channels: whose stream (net/ filters on it)
};

struct kind_totals {
  int64_t actors = 0;
  std::map<std::string, double> counters;
  std::map<std::string, latency_histogram> histograms;
};

struct metrics {
  std::string engine_name;
  std::map<std::string, actor_record> live;
  std::map<std::string, kind_totals> kinds;
  // The same totals per tenant, from the reports that name one (channels): live channels,
  // counters and latencies of that tenant's streams only. Bounded by the tenants of the API
  // keys (a report without a tenant counts only in `kinds`).
  std::map<std::string, kind_totals> tenants;
  int64_t reports = 0;
  clock::time_point started = clock::now();
};

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

nlohmann::json histogram_json(const latency_histogram& h) {
  return {{"count", h.total()},
          {"sum_ms", h.sum_ms()},
          {"p50_ms", h.quantile_ms(0.5)},
          {"p90_ms", h.quantile_ms(0.9)},
          {"p99_ms", h.quantile_ms(0.99)},
          {"buckets_ms", latency_histogram::bounds_ms},
          {"counts", h.counts()}};
}

// A kind's or a tenant's totals: live actors, counters, latency histograms.
nlohmann::json totals_json(const kind_totals& t) {
  nlohmann::json h = nlohmann::json::object();
  for (const auto& [key, hist] : t.histograms) h[key] = histogram_json(hist);
  return {{"live", t.actors}, {"counters", t.counters}, {"latency", h}};
}

std::string snapshot(const metrics& m) {
  using nlohmann::json;
  json j;
  j["engine"] = m.engine_name;
  j["uptime_s"] = std::chrono::duration<double>(clock::now() - m.started).count();
  j["reports"] = m.reports;
  json actors = json::array();
  for (const auto& [name, r] : m.live)
    actors.push_back({{"name", name},
                      {"kind", r.kind},
                      {"mailbox", r.mailbox},
                      {"messages_per_s", r.messages_per_s},
                      {"busy", r.busy},
                      {"report_steady_ns", r.report_steady_ns},
                      {"counters", r.counters},
                      {"gauges", r.gauges},
                      {"text", r.text},
                      {"tenant", r.tenant}});
  j["actors"] = actors;
  json kinds = json::object();
  for (const auto& [kind, t] : m.kinds) kinds[kind] = totals_json(t);
  j["kinds"] = kinds;
  json tenants = json::object();
  for (const auto& [tenant, t] : m.tenants) tenants[tenant] = totals_json(t);
  j["tenants"] = tenants;
  // Derived figures a dashboard shows first.
  auto counter = [&](const char* kind, const char* key) {
    auto it = m.kinds.find(kind);
    if (it == m.kinds.end()) return 0.0;
    auto c = it->second.counters.find(key);
    return c == it->second.counters.end() ? 0.0 : c->second;
  };
  const double dispatches = counter("batcher", "dispatches");
  j["summary"] = {
      {"channels_live", m.kinds.count("channel") ? m.kinds.at("channel").actors : 0},
      {"audio_s", counter("channel", "audio_ms") / 1000.0},
      {"finals", counter("channel", "finals")},
      {"partials", counter("channel", "partials")},
      {"batches", counter("batcher", "batches")},
      {"mean_batch_tokens", ratio(counter("batcher", "batch_tokens"), counter("batcher", "batches"))},
      {"mean_batch_streams", ratio(counter("batcher", "batch_streams"), counter("batcher", "batches"))},
      {"padding_waste", ratio(counter("batcher", "padded_frames"),
                              counter("batcher", "computed_frames") + counter("batcher", "padded_frames"))},
      {"padding_avoided", ratio(counter("batcher", "padding_avoided_frames"),
                                counter("batcher", "computed_frames") + counter("batcher", "padding_avoided_frames"))},
      {"expert_load_max_mean_before", ratio(counter("batcher", "imbalance_before_sum"), dispatches)},
      {"expert_load_max_mean_after", ratio(counter("batcher", "imbalance_after_sum"), dispatches)},
      {"pairs", counter("batcher", "pairs")},
      {"spilled", counter("batcher", "spilled")},
      {"rerouted", counter("batcher", "rerouted")},
      {"kept_over_capacity", counter("batcher", "kept_over_capacity")},
      {"dropped", counter("batcher", "dropped")},
      {"failovers", counter("batcher", "failovers")},
      {"bytes_per_token_sent", ratio(counter("batcher", "bytes_sent"), counter("batcher", "rows_sent"))},
      {"utterances_lost", counter("batcher", "utterances_lost")},
      {"restarts", counter("supervisor", "restarts")},
      {"refused", counter("supervisor", "refused")},
  };
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

metrics_actor_type::behavior_type metrics_actor(metrics_actor_type::pointer self, std::string engine_name,
                                                std::shared_ptr<snapshot_board> board, int publish_ms) {
  auto st = std::make_shared<metrics>();
  st->engine_name = std::move(engine_name);
  for (const auto& [kind, key] : engine_latencies)  // exported with zero counts from the start
    st->kinds[std::string(kind)].histograms.try_emplace(std::string(key));
  // Published at once, so that a reader never finds the board empty once the engine runs.
  board->publish(snapshot(*st));
  self->delayed_send(self, std::chrono::milliseconds(publish_ms), report_atom::value);
  return {
      [st](actor_report& r) {
        ++st->reports;
        auto& k = st->kinds[r.kind];
        auto add = [&r](kind_totals& t) {
          for (std::size_t i = 0; i < r.keys.size() && i < r.counts.size(); ++i) t.counters[r.keys[i]] += r.counts[i];
          for (std::size_t i = 0; i < r.hist_keys.size() && i < r.hists.size(); ++i)
            t.histograms[r.hist_keys[i]].merge(r.hists[i], i < r.hist_sums.size() ? r.hist_sums[i] : 0.0);
        };
        add(k);
        // A report that names no tenant from an actor counted under one (as each channel's
        // first report says) still counts for it.
        if (r.tenant.empty())
          if (const auto known = st->live.find(r.name); known != st->live.end()) r.tenant = known->second.tenant;
        kind_totals* tenant = nullptr;
        if (!r.tenant.empty()) {
          auto [t, fresh] = st->tenants.try_emplace(r.tenant);
          if (fresh)  // a stream's latencies, with zero counts until observed (as `kinds` has them)
            for (const auto& [kind, key] : engine_latencies)
              if (kind == "channel") t->second.histograms.try_emplace(std::string(key));
          tenant = &t->second;
          add(*tenant);
        }
        if (r.gone) {
          if (auto it = st->live.find(r.name); it != st->live.end()) {
            --k.actors;
            // The tenant the actor was counted under (its first report's).
            if (!it->second.tenant.empty()) --st->tenants[it->second.tenant].actors;
            st->live.erase(it);
          }
          return;
        }
        auto [it, inserted] = st->live.try_emplace(r.name);
        if (inserted) {
          ++k.actors;
          if (tenant) ++tenant->actors;
        } else if (it->second.tenant != r.tenant) {
          // A stream's tenant does not change; should a report say otherwise, move the count.
          if (!it->second.tenant.empty()) --st->tenants[it->second.tenant].actors;
          if (tenant) ++tenant->actors;
        }
        auto& rec = it->second;
        rec.kind = r.kind;
        rec.mailbox = r.mailbox;
        rec.text = r.text;
        rec.tenant = r.tenant;
        const double interval_s = static_cast<double>(r.interval_ns) * 1e-9;
        rec.messages_per_s = ratio(static_cast<double>(r.messages), interval_s);
        rec.busy = ratio(static_cast<double>(r.busy_ns), static_cast<double>(r.interval_ns));
        rec.report_steady_ns = r.taken_ns;
        for (std::size_t i = 0; i < r.keys.size() && i < r.counts.size(); ++i) rec.counters[r.keys[i]] += r.counts[i];
        for (std::size_t i = 0; i < r.gauge_keys.size() && i < r.gauges.size(); ++i) rec.gauges[r.gauge_keys[i]] = r.gauges[i];
      },
      [st, board](snapshot_atom) -> std::string {
        auto s = snapshot(*st);
        board->publish(s);
        return s;
      },
      [self, st, board, publish_ms](report_atom) {
        board->publish(snapshot(*st));
        self->delayed_send(self, std::chrono::milliseconds(publish_ms), report_atom::value);
      },
  };
}

}  // namespace sluice::actors
