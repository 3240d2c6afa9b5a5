#include "actors/batcher_actor.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>

#include "actors/batcher_state.hpp"
#include "actors/cpu_affinity.hpp"
#include "actors/result_postproc.hpp"
#include "kernels/cuda_backend.hpp"
#include "kernels/device.hpp"
#include "moe/device/cpu_backend.hpp"

namespace sluice::actors {

namespace batcher_detail {

void report_lost(self_ptr self, const state_ptr& st, const stream_key& key, stream_entry& e, const std::string& why) {
  // Chunks still to come only when its last one has not come yet.
  if (!(e.state && e.state->finished()) && !e.pending_last) st->lost.emplace(key, e.channel.address());
  logits_chunk c;
  c.channel = key.first;
  c.utterance = key.second;
  c.last = true;
  c.error = why;
  self->send(e.channel, logits_atom::value, std::move(c));
  st->meter.count("utterances_lost");
}


// Gives a stream (not in a step) its features; marks it waiting when it has a chunk ready.
result<void> take_features(const state_ptr& st, stream_entry& e, const float* frames, std::size_t n_values,
                           bool last) {
  const auto n_mels = static_cast<std::size_t>(st->res->model->arch().n_mels);
  if (n_values % n_mels != 0) return fail(errc::invalid_argument, "features are not whole frames");
  auto ok = e.state->accept_fbank(frames, static_cast<int64_t>(n_values / n_mels));
  if (ok && last) ok = e.state->finish();
  if (!ok) return ok;
  if (!e.waiting && e.state->ready_frames() > 0) {
    e.waiting = true;
    e.ready_since = clock::now();
    // Offline work (files, uploads) has all its audio already: on a lane with no live stream
    // it does not wait for a gathering window but is due at once (waiting idled the lane: a
    // one-core `sluice transcribe` of one file at a time ran at 83% CPU). Where a live stream
    // is on the lane, offline arrivals wait their window as live ones do, so a live stream
    // arriving in it still goes first (live_priority). [engine] offline_gather: always wait.
    const auto live = [](const auto& kv) { return !kv.second.offline; };
    if (e.offline && !st->res->cfg.engine.offline_gather && std::none_of(st->streams.begin(), st->streams.end(), live))
      e.ready_since -= std::chrono::milliseconds(st->res->cfg.engine.batch_window_ms);
  }
  return {};
}

// Gives up half hi: every utterance in it is reported lost; the others are untouched.
void abort_half(self_ptr self, const state_ptr& st, int hi, const std::string& why) {
  auto& h = st->halves[hi];
  spdlog::warn("batcher: micro-batch {} given up: {}", hi, why);
  h.mb->abort();
  // An expert may still be reading this half's blocks or writing their replies (a late reply,
  // a block that failed over): the next step gets new buffers, the old ones live on with the
  // messages that hold them.
  for (auto& m : h.slots) m = fresh_block();
  for (const auto& key : h.keys) {
    auto it = st->streams.find(key);
    if (it == st->streams.end()) continue;
    if (!it->second.dropped) report_lost(self, st, key, it->second, why);
    st->streams.erase(it);
  }
  h.keys.clear();
  h.streams.clear();
  h.device_out.clear();
  h.busy = false;
}

// A lane's step runs to the end at once: the next one is started from the mailbox (a flush),
// so features and drops that came meanwhile are taken in between, and no call chain grows.
void continue_later(self_ptr self, const state_ptr& st) {
  if (st->local) self->send(self, flush_atom::value);
  else maybe_start(self, st, false);
}

// Lane decoding: the step's logits of stream e go into its decoder here, and chunk c carries the
// result (final when the utterance is done, else a partial when asked for) instead of logits. A
// decoder that fails loses the utterance (c.error) and the stream is dropped.
void decode_here(const state_ptr& st, stream_entry& e, const moe::stream_logits& lg, bool done, logits_chunk& c) {
  c.decoded = true;
  c.frames = static_cast<int32_t>(lg.n_frames);
  if (lg.n_frames > 0)
    if (auto ok = e.decoder->accept(lg.logits, static_cast<int32_t>(lg.n_frames)); !ok) {
      c.error = "decoding failed: " + ok.error().message;
      c.last = true;
      if (!e.state->finished() && !e.pending_last) st->lost.emplace(stream_key{c.channel, c.utterance}, e.channel.address());
      e.decoder.reset();
      e.dropped = true;
      st->meter.count("utterances_lost");
      return;
    }
  st->meter.count("decoded_frames", static_cast<double>(lg.n_frames));
  if (!done && !e.partials) return;
  const auto r = done ? e.decoder->finalize() : e.decoder->partial();
  c.text = r.text;
  c.words.reserve(r.words.size());
  for (const auto& w : r.words) c.words.push_back({w.word, w.start_ms, w.end_ms, w.confidence});
  c.alternatives = to_alternative_events(r.alternatives, 0);
  if (done) st->meter.count("utterances_decoded");
}

// Stream e (key) is done with nothing left to compute (its last features brought no output
// frame): its channel still gets the last chunk, or it would wait forever; with the decoder here
// (lane decoding), the decoder's final result in it. The caller erases the stream.
void send_done(self_ptr self, const state_ptr& st, const stream_key& key, stream_entry& e) {
  logits_chunk done;
  done.channel = key.first;
  done.utterance = key.second;
  done.first_frame = e.state->position();
  done.vocab = st->res->model->arch().vocab_size;
  done.last = true;
  if (e.dropped) return;  // its channel is gone
  if (e.decoder) decode_here(st, e, moe::stream_logits{e.state->position(), 0, done.vocab, {}}, true, done);
  self->send(e.channel, logits_atom::value, std::move(done));
}

void finish_half(self_ptr self, const state_ptr& st, int hi) {
  auto& h = st->halves[hi];
  const auto now = clock::now();
  // A lane's local_experts::run has finished the micro-batch already (a device lane's step too).
  if (!st->device_model && h.mb->current_phase() != moe::micro_batch::phase::done)
    if (auto ok = h.mb->finish(); !ok) {
      abort_half(self, st, hi, ok.error().message);
      continue_later(self, st);
      return;
    }
  // Two passes: streams whose channel decodes (live ones) get their logits first; the streams
  // this lane decodes itself (offline, lane_decoding) after, so no live result waits for that
  // decoding (the lane's next step does). Each stream is handled in exactly one pass.
  for (int pass = 0; pass < 2; ++pass)
  for (std::size_t i = 0; i < h.keys.size(); ++i) {
    auto it = st->streams.find(h.keys[i]);
    if (it == st->streams.end()) continue;
    auto& e = it->second;
    if ((e.decoder != nullptr) != (pass == 1)) continue;
    e.in_step = false;
    const auto lg = st->device_model ? moe::stream_logits{h.device_out[i].p0, h.device_out[i].n_frames,
                                                          h.device_out[i].vocab, h.device_out[i].logits}
                                     : h.mb->logits(i);
    const bool done = e.state->done();
    if (!e.dropped) {
      logits_chunk c;
      c.channel = h.keys[i].first;
      c.utterance = h.keys[i].second;
      c.first_frame = lg.first_frame;
      c.vocab = lg.vocab;
      c.last = done;
      if (e.decoder) decode_here(st, e, lg, done, c);
      else c.logits.assign(lg.logits.begin(), lg.logits.end());
      self->send(e.channel, logits_atom::value, std::move(c));
    }
    if (done || e.dropped) {
      st->streams.erase(it);
      continue;
    }
    if (!e.pending.empty() || e.pending_last) {
      const bool had_last = e.pending_last;
      auto ok = take_features(st, e, e.pending.data(), e.pending.size(), e.pending_last);
      e.pending.clear();
      e.pending_last = false;
      if (!ok) {
        report_lost(self, st, h.keys[i], e, ok.error().message);
        if (had_last) st->lost.erase(h.keys[i]);  // nothing more of it will come
        st->streams.erase(it);
        continue;
      }
      if (e.state->done()) {  // the pending last chunk brought no output frame
        send_done(self, st, h.keys[i], e);
        st->streams.erase(it);
        continue;
      }
    }
    if (e.state->ready_frames() > 0 && !e.waiting) {
      // A stream that goes on (more of its utterance is ready) does not wait for a new
      // window: the window gathers new arrivals, and this one has already waited its turn.
      e.waiting = true;
      e.ready_since = now - std::chrono::milliseconds(st->res->cfg.engine.batch_window_ms);
    }
  }
  st->meter.histogram(latency_key::step).add(ms_since(h.started, now));
  h.keys.clear();
  h.streams.clear();
  h.device_out.clear();
  h.busy = false;
  continue_later(self, st);
}

// A device lane's step: every stream of half hi in one device_model::step, to the end.
bool run_device_step(self_ptr self, const state_ptr& st, int hi, clock::time_point now) {
  auto& h = st->halves[hi];
  std::vector<moe::device_stream*> streams;
  for (const auto& k : h.keys) streams.push_back(st->streams.at(k).device_state.get());
  h.busy = true;
  h.started = now;
  auto out = st->device_model->step(streams, st->res->cfg.engine.max_chunks_per_step);
  if (!out) {
    // The step's streams have undefined device caches now: they are reported lost.
    abort_half(self, st, hi, out.error().message);
    continue_later(self, st);
    return false;
  }
  h.device_out = std::move(*out);
  int64_t tokens = 0;
  for (const auto& c : h.device_out) tokens += c.n_frames;
  st->meter.count("batches");
  st->meter.count("batch_streams", static_cast<double>(h.keys.size()));
  st->meter.count("batch_tokens", static_cast<double>(tokens));
  st->meter.count("device_steps");
  finish_half(self, st, hi);
  return true;
}

bool start_half(self_ptr self, const state_ptr& st, int hi, const std::vector<stream_key>& keys) {
  auto& h = st->halves[hi];
  const auto now = clock::now();
  h.keys = keys;
  h.streams.clear();
  for (const auto& k : keys) {
    auto& e = st->streams.at(k);
    e.in_step = true;
    e.waiting = false;
    st->meter.histogram(latency_key::queue_wait).add(ms_since(e.ready_since, now));
    h.streams.push_back(e.state);
  }
  // A device lane has no token blocks to size: its step counts its tokens from what it ran.
  if (st->device_model) return run_device_step(self, st, hi, now);
  int64_t tokens = 0;
  for (auto* s : h.streams) tokens += s->step_frames(st->res->cfg.engine.max_chunks_per_step);
  size_slots(st, h, std::max<int64_t>(tokens, st->res->cfg.engine.token_budget), st->res->cfg.engine.preallocate);
  h.failed_over.assign(h.slots.size(), 0);
  if (auto ok = h.mb->begin(h.streams, st->res->cfg.engine.max_chunks_per_step); !ok) {
    h.busy = true;
    abort_half(self, st, hi, ok.error().message);
    return false;
  }
  st->meter.count("batches");
  st->meter.count("batch_streams", static_cast<double>(keys.size()));
  st->meter.count("batch_tokens", static_cast<double>(h.mb->n_tokens()));
  h.busy = true;
  h.started = now;
  advance(self, st, hi);
  return true;
}

// Streams with ready frames that wait, up to the budget: the longest-waiting first; with
// [engine] live_priority every live stream before any offline one (files, uploads), so offline
// work only fills what live streams leave of the budget.
std::vector<stream_key> pick(const state_ptr& st, int64_t budget, std::vector<int64_t>& lengths) {
  struct cand {
    stream_key key;
    clock::time_point since;
    int64_t frames;
    bool offline;
  };
  std::vector<cand> c;
  const int64_t max_chunks = st->res->cfg.engine.max_chunks_per_step;
  for (auto& [k, e] : st->streams)
    if (e.waiting && !e.in_step && !e.dropped)
      c.push_back({k, e.ready_since, e.state->step_frames(max_chunks), e.offline});
  const bool live_first = st->res->cfg.engine.live_priority;
  std::sort(c.begin(), c.end(), [live_first](const cand& a, const cand& b) {
    if (live_first && a.offline != b.offline) return !a.offline;
    return a.since < b.since;
  });
  std::vector<cand> chosen;
  int64_t total = 0;
  for (const auto& x : c) {
    if (!chosen.empty() && total + x.frames > budget) break;
    chosen.push_back(x);
    total += x.frames;
  }
  // Bucketing: similar lengths side by side, so each half's streams end their step together.
  std::stable_sort(chosen.begin(), chosen.end(), [](const cand& a, const cand& b) { return a.frames < b.frames; });
  std::vector<stream_key> keys;
  lengths.clear();
  for (const auto& x : chosen) {
    keys.push_back(x.key);
    lengths.push_back(x.frames);
  }
  return keys;
}

bool any_waiting(const state_ptr& st) {
  return std::any_of(st->streams.begin(), st->streams.end(),
                     [](const auto& kv) { return kv.second.waiting && !kv.second.in_step && !kv.second.dropped; });
}

void schedule_flush(self_ptr self, const state_ptr& st) {
  if (st->flush_pending) return;
  st->flush_pending = true;
  self->delayed_send(self, std::chrono::milliseconds(st->res->cfg.engine.batch_window_ms), flush_atom::value);
}


void maybe_start(self_ptr self, const state_ptr& st, bool window_elapsed) {
  // Re-choose the hot experts every rebalance_ms, and as soon as there is any load at all.
  const bool no_hot_yet = std::none_of(st->hot.begin(), st->hot.end(), [](uint8_t h) { return h != 0; }) &&
                          std::any_of(st->window_load.begin(), st->window_load.end(), [](double l) { return l > 0; });
  if (no_hot_yet || ms_since(st->last_rebalance, clock::now()) >= st->res->cfg.engine.rebalance_ms) {
    rebalance(self, st);
    st->last_rebalance = clock::now();
  }
  if ((st->experts.empty() && !st->local) || !any_waiting(st)) return;
  if (!window_elapsed) {
    // Start now only if some stream has already waited a whole window.
    const auto now = clock::now();
    const double window = st->res->cfg.engine.batch_window_ms;
    const bool due = std::any_of(st->streams.begin(), st->streams.end(), [&](const auto& kv) {
      return kv.second.waiting && !kv.second.in_step && ms_since(kv.second.ready_since, now) >= window;
    });
    if (!due) {
      schedule_flush(self, st);
      return;
    }
  }
  const int64_t budget = st->res->cfg.engine.token_budget;
  std::vector<int> idle;
  for (int i = 0; i < n_halves; ++i)
    if (!st->halves[i].busy) idle.push_back(i);
  if (idle.empty()) return;  // a finishing half starts the next
  std::vector<int64_t> lengths;
  auto keys = pick(st, budget, lengths);
  if (keys.empty()) return;
  int64_t padded = 0, total = 0;
  const int64_t longest = lengths.back();
  for (auto l : lengths) {
    padded += longest - l;
    total += l;
  }
  // The packed layout computes exactly the streams' frames (padded_frames: what is computed
  // beyond them, 0 by construction); a padded [streams, longest] batch would have computed
  // padding_avoided_frames more.
  st->meter.count("padded_frames", 0);
  st->meter.count("padding_avoided_frames", static_cast<double>(padded));
  st->meter.count("computed_frames", static_cast<double>(total));
  if (st->res->cfg.engine.overlap && !st->local && idle.size() == n_halves && keys.size() >= 2) {
    // Two halves of about equal tokens.
    int64_t acc = 0;
    std::size_t cut = 0;
    while (cut + 1 < keys.size() && 2 * (acc + lengths[cut]) <= total) acc += lengths[cut++];
    if (cut == 0) cut = 1;
    std::vector<stream_key> a(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(cut));
    std::vector<stream_key> b(keys.begin() + static_cast<std::ptrdiff_t>(cut), keys.end());
    start_half(self, st, idle[0], a);
    start_half(self, st, idle[1], b);
  } else {
    start_half(self, st, idle[0], keys);
  }
  if (any_waiting(st)) schedule_flush(self, st);
}

}  // namespace batcher_detail

namespace {

using namespace batcher_detail;

// The backend and the resident model of device lane `lane` ([engine] lane_backend).
result<std::pair<std::unique_ptr<kernels::backend>, std::unique_ptr<moe::device_model>>> make_lane_device(
    const engine_resources& res, int32_t lane) {
  const auto& arch = res.model->arch();
  if (res.window.chunk_frames != arch.chunk_frames || res.window.left_chunks != arch.left_chunks)
    return fail(errc::unsupported, "the device forward runs the model's trained attention window only");
  std::unique_ptr<kernels::backend> dev;
  if (res.cfg.engine.lane_backend == config::lane_backend::device_cpu) {
    dev = moe::make_cpu_backend(res.compute);
  } else {
    auto gpus = kernels::cuda_devices();
    if (!gpus) return tl::unexpected(gpus.error());
    auto b = kernels::make_cuda_backend(lane % static_cast<int32_t>(gpus->size()));
    if (!b) return tl::unexpected(b.error());
    dev = std::move(*b);
  }
  if (res.cfg.model.math == "bf16" && dev->set_math(kernels::math_mode::bf16) != kernels::status::ok)
    return fail(errc::unsupported, "model.math = bf16 on " + dev->name() + ": " + dev->last_error());
  auto model = moe::device_model::create(res.model, *dev, res.compute);
  if (!model) return tl::unexpected(model.error());
  return std::make_pair(std::move(dev), std::move(*model));
}

compute_actor_type::behavior_type batcher_behavior(self_ptr self, std::shared_ptr<const engine_resources> res,
                                                   metrics_actor_type metrics, supervisor_actor_type supervisor, int32_t lane) {
  auto st = std::make_shared<batcher>();
  if (lane >= 0) {
    st->local.emplace(*res->model, res->compute);
    st->meter = actor_meter("lane/" + std::to_string(lane), "batcher");
    st->lane_pairs.assign(static_cast<std::size_t>(res->model->arch().n_layers * res->model->arch().n_routed), 0);
  }
  st->res = res;
  if (lane >= 0 && res->cfg.engine.lane_backend != config::lane_backend::cpu) {
    if (auto dev = make_lane_device(*res, lane)) {
      st->device = std::move(dev->first);
      st->device_model = std::move(dev->second);
      st->meter.gauge("device_weight_bytes", static_cast<double>(st->device_model->weight_bytes()));
      spdlog::info("lane {}: model steps on {}", lane, st->device->name());
    } else {
      // The engine checked at start that the device can be used: this is unexpected. The lane
      // still runs, on its own CPU forward.
      spdlog::error("lane {}: no device forward ({}); running on the CPU", lane, dev.error().message);
    }
  }
  st->metrics = metrics;
  st->supervisor = supervisor;
  const auto& arch = res->model->arch();
  const auto n = static_cast<std::size_t>(arch.n_layers * arch.n_routed);
  st->window_load.assign(n, 0.0);
  st->load_ema.assign(n, 0.0);
  st->hot.assign(n, 0);
  st->shard_before.assign(static_cast<std::size_t>(res->placement.n_shards() + 64 + 1), 0);
  st->shard_after.assign(static_cast<std::size_t>(res->placement.n_shards() + 64 + 1), 0);
  for (int i = 0; i < n_halves; ++i)
    st->halves[i].mb = std::make_unique<moe::micro_batch>(*res->model, i, res->compute);
  if (res->cfg.engine.preallocate && !st->device_model) {
    // A lane runs each step to its end inside start_half, always on half 0: only that one.
    const auto bounds = res->largest_step();
    for (auto& h : st->halves) {
      if (st->local) {
        st->local->preallocate(*h.mb, bounds, res->window);
        break;
      }
      h.mb->preallocate(bounds, res->window);
      size_slots(st, h, bounds.tokens, true);
    }
  }
  self->set_down_handler([self, st](caf::down_msg& dm) {
    // A channel went away: its streams are forgotten (those in a step once the step ends).
    st->monitored.erase(dm.source);
    for (auto it = st->lost.begin(); it != st->lost.end();) it = it->second == dm.source ? st->lost.erase(it) : std::next(it);
    for (auto it = st->streams.begin(); it != st->streams.end();) {
      if (it->second.channel.address() == dm.source) {
        it->second.dropped = true;
        if (!it->second.in_step) {
          it = st->streams.erase(it);
          continue;
        }
      }
      ++it;
    }
  });
  self->send(self, report_atom::value);
  return {
      [self, st](shards_atom, std::vector<block_sink_actor> experts, std::vector<spillway_actor_type> spillways) {
        st->experts = std::move(experts);
        st->spillways = std::move(spillways);
        for (const auto& s : st->spillways) self->send(s, hot_atom::value, st->hot);
        maybe_start(self, st, true);
      },
      [self, st](features_atom, feature_chunk& c) {
        actor_meter::scope busy(st->meter);
        const stream_key key{c.channel, c.utterance};
        if (auto l = st->lost.find(key); l != st->lost.end()) {
          // The rest of an utterance already reported lost: nothing to run it for.
          if (c.last) st->lost.erase(l);
          st->meter.count("chunks_after_loss");
          return;
        }
        auto it = st->streams.find(key);
        auto channel = caf::actor_cast<channel_actor_type>(self->current_sender());
        if (it == st->streams.end()) {
          stream_entry e;
          result<void> made;
          if (st->device_model) {
            if (auto ds = st->device_model->open_stream()) {
              e.device_state = std::move(*ds);
              e.state = &e.device_state->host();
            } else {
              made = tl::unexpected(ds.error());
            }
          } else if (auto s = moe::stream_state::create(*st->res->model, st->res->window, st->res->compute)) {
            e.own_state = std::make_unique<moe::stream_state>(std::move(*s));
            e.state = e.own_state.get();
          } else {
            made = tl::unexpected(s.error());
          }
          if (!made) {
            // The utterance cannot run: its channel hears so now rather than waiting forever.
            logits_chunk lost;
            lost.channel = key.first;
            lost.utterance = key.second;
            lost.last = true;
            lost.error = "cannot create the model state: " + made.error().message;
            self->send(channel, logits_atom::value, std::move(lost));
            st->meter.count("utterances_lost");
            if (!c.last) st->lost.emplace(key, channel.address());
            return;
          }
          e.channel = channel;
          e.decoder = std::move(c.decoder);  // lane decoding: the channel handed it over
          e.partials = c.partials;
          it = st->streams.emplace(key, std::move(e)).first;
          if (st->monitored.insert(channel.address()).second) {
            self->monitor(channel);
            st->meter.count("monitors_placed");
          }
          st->meter.count("utterances");
        }
        auto& e = it->second;
        e.offline = e.offline || c.offline;
        const auto n_mels = static_cast<double>(st->res->model->arch().n_mels);
        st->meter.count("feature_frames", static_cast<double>(c.frames.size()) / n_mels);
        if (e.in_step) {
          e.pending.insert(e.pending.end(), c.frames.begin(), c.frames.end());
          e.pending_last = e.pending_last || c.last;
          return;
        }
        if (auto ok = take_features(st, e, c.frames.data(), c.frames.size(), c.last); !ok) {
          report_lost(self, st, key, e, ok.error().message);
          if (c.last) st->lost.erase(key);  // nothing more of it will come
          st->streams.erase(it);
          return;
        }
        if (e.state->done()) {
          // Finished with nothing left to compute (too short for one output frame, or the
          // last chunk of a stream whose frames were all stepped already).
          send_done(self, st, key, e);
          st->streams.erase(it);
          return;
        }
        maybe_start(self, st, false);
      },
      [self, st](drop_atom, channel_id ch) {
        for (auto it = st->lost.begin(); it != st->lost.end();) it = it->first.first == ch ? st->lost.erase(it) : std::next(it);
        for (auto it = st->streams.begin(); it != st->streams.end();) {
          if (it->first.first == ch) {
            it->second.dropped = true;
            if (!it->second.in_step) {
              it = st->streams.erase(it);
              continue;
            }
          }
          ++it;
        }
      },
      [self, st](flush_atom) {
        st->flush_pending = false;
        actor_meter::scope busy(st->meter);
        maybe_start(self, st, true);
      },
      [self, st](report_atom) {
        const auto now = clock::now();
        if (ms_since(st->last_rebalance, now) >= st->res->cfg.engine.rebalance_ms) {
          rebalance(self, st);
          st->last_rebalance = now;
        }
        // How long ready live audio waits: what admission looks at (supervisor). Offline streams
        // are left out: with live_priority they wait behind live ones on purpose, and a long
        // file queue must not refuse new live channels.
        double oldest = 0;
        for (const auto& [k, e] : st->streams)
          if (e.waiting && !e.in_step && !e.offline) oldest = std::max(oldest, ms_since(e.ready_since, now));
        int64_t growths = st->pool_growths;
        for (const auto& h : st->halves) growths += h.mb->growths();
        st->meter.gauge("buffer_growths", static_cast<double>(growths));
        st->meter.gauge("streams", static_cast<double>(st->streams.size()));
        st->meter.gauge("monitored_channels", static_cast<double>(st->monitored.size()));
        st->meter.gauge("queue_wait_now_ms", oldest);
        int64_t hot = 0;
        for (auto v : st->hot) hot += v;
        st->meter.gauge("replicated_experts", static_cast<double>(hot));
        add_pair_counts(st->meter, st->lane_pairs, st->res->model->arch().n_routed);
        std::fill(st->lane_pairs.begin(), st->lane_pairs.end(), 0);
        if (st->supervisor) self->send(st->supervisor, load_atom::value, oldest);
        if (st->metrics) self->send(st->metrics, st->meter.take(static_cast<int64_t>(self->mailbox().size())));
        self->delayed_send(self, std::chrono::milliseconds(st->res->cfg.engine.report_ms), report_atom::value);
      },
  };
}

}  // namespace

compute_actor_type::behavior_type batcher_actor(compute_actor_type::pointer self,
                                                std::shared_ptr<const engine_resources> res, metrics_actor_type metrics,
                                                supervisor_actor_type supervisor) {
  return batcher_behavior(self, std::move(res), std::move(metrics), std::move(supervisor), -1);
}

compute_actor_type::behavior_type lane_actor(compute_actor_type::pointer self, std::shared_ptr<const engine_resources> res,
                                             metrics_actor_type metrics, supervisor_actor_type supervisor, int32_t index,
                                             int32_t cpu) {
  // A detached actor is initialised on its own thread: what is set here holds for the lane's life.
  if (self->getf(caf::abstract_actor::is_detached_flag)) {
    if (cpu >= 0) {
      if (const auto why = pin_current_thread(cpu); !why.empty())
        spdlog::warn("lane {}: not pinned to cpu {}: {}", index, cpu, why);
      else
        spdlog::debug("lane {}: pinned to cpu {}", index, cpu);
    }
    // Named last: whoever finds the name finds the thread already pinned.
    name_current_thread("sluice-lane-" + std::to_string(index));
  }
  return batcher_behavior(self, std::move(res), std::move(metrics), std::move(supervisor), index);
}

}  // namespace sluice::actors
