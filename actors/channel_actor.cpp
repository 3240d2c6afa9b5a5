#include "actors/channel_actor.hpp"

#include "actors/cpu_affinity.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "actors/actor_meter.hpp"
#include "actors/channel_progress.hpp"
#include "actors/result_postproc.hpp"
#include "dsp/fbank.hpp"
#include "moe/decoder/ctc_decoder.hpp"
#include "moe/frontend.hpp"  // subsampled_length

namespace sluice::actors {

namespace {

using clock = std::chrono::steady_clock;

constexpr int64_t samples_per_ms = dsp::model_sample_rate / 1000;
// Audio kept behind the newest sample, so an utterance start the endpointer reports late
// (VAD confirmation, edge extension) can still be fed from its true start.
constexpr int64_t history_ms = 3000;
// Audio taken in between two progress reports while the mailbox is not empty (see
// channel_progress.hpp): fewer reports during a flood, still a fine-grained view of it.
constexpr int64_t progress_step_ms = 100;

double ms_between(clock::time_point a, clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// An utterance's claim on the lane it was placed on (lane_set): open_cost while it is open, plus
// the frames sent and not yet answered. Released in full when the utterance ends, and by the
// destructor whatever way the utterance goes (erased, or its channel stopping or failing).
class lane_claim {
 public:
  lane_claim() = default;
  // `placed`: what lane_set::place claimed for the utterance (the open cost).
  lane_claim(std::shared_ptr<lane_set> set, std::size_t index, int64_t placed)
      : set_(std::move(set)), index_(index), placed_(placed), held_(placed) {}
  lane_claim(lane_claim&& o) noexcept
      : set_(std::move(o.set_)), index_(o.index_), placed_(o.placed_), held_(std::exchange(o.held_, 0)) {}
  lane_claim& operator=(lane_claim&& o) noexcept {
    if (this != &o) {
      release_all();
      set_ = std::move(o.set_);
      index_ = o.index_;
      placed_ = o.placed_;
      held_ = std::exchange(o.held_, 0);
    }
    return *this;
  }
  lane_claim(const lane_claim&) = delete;
  lane_claim& operator=(const lane_claim&) = delete;
  ~lane_claim() { release_all(); }

  void sent(int64_t frames) {
    if (!set_ || frames <= 0) return;
    set_->add(index_, frames);
    held_ += frames;
  }
  // Frames answered: released, but never the open cost (that goes with release_all).
  void answered(int64_t frames) {
    const int64_t r = std::min(frames, held_ - placed_);
    if (!set_ || r <= 0) return;
    set_->add(index_, -r);
    held_ -= r;
  }
  void release_all() {
    if (set_ && held_ > 0) set_->add(index_, -held_);
    held_ = 0;
  }

 private:
  std::shared_ptr<lane_set> set_;
  std::size_t index_ = 0;
  int64_t placed_ = 0;
  int64_t held_ = 0;
};

struct utterance {
  int64_t start_sample = 0;
  // Where it runs (lane_set::place at its start): the slot and the compute actor that was in it.
  std::size_t lane = 0;
  compute_actor_type compute;
  lane_claim claim;
  int64_t end_sample = -1;  // known for a whole segment: its final ends there
  // The stream options the decoder was made from: the decoder points into them (a lexicon
  // decoder's hotword lexicon), and a tenant update replaces the channel's own copy while this
  // utterance may still be decoding. Declared before the decoder, so it outlives it.
  std::shared_ptr<const moe::prepared_stream> prepared;
  std::optional<moe::ctc_decoder> decoder;
  // The decoder went to the lane with the first features (lane_set::decodes, offline): results
  // come back decoded (logits_chunk::decoded).
  bool lane_decodes = false;
  bool features_started = false;  // its first features went out (to u.compute)
  std::string last_partial;
  int64_t fbank_frames_sent = 0;
  int64_t recognized_to = -1;  // 16 kHz sample up to which logits came back (-1: none yet)
  int64_t frames_answered = 0;  // subsampled frames logits came back for
  std::deque<std::pair<int64_t, clock::time_point>> sent;  // (fbank frames sent so far, when)
  clock::time_point ended{};                                // when the last features went out
  bool features_done = false;
  // Offline work (its channel's request said so, or a whole segment): its features yield to
  // live streams in the lanes, and no final latency is recorded for it.
  bool offline = false;
  std::optional<transcript_event> final_event;  // held until every earlier utterance's final is out
};

struct channel {
  std::shared_ptr<const engine_resources> res;
  channel_id id = 0;
  std::shared_ptr<channel_pipeline> pipe;
  bool partials = true;
  caf::actor subscriber;
  std::shared_ptr<lane_set> lanes;  // where each new utterance is placed
  metrics_actor_type metrics;
  supervisor_actor_type supervisor;
  dsp::streaming_fbank fbank;
  std::map<int64_t, utterance> utterances;  // in flight
  int64_t next_utterance = 0;
  // Live path: 16 kHz history and the open utterance.
  std::vector<float> history;
  int64_t history_base = 0;  // sample index of history[0]
  int64_t received = 0;      // 16 kHz samples so far
  int64_t open = -1;         // open utterance id, or -1
  bool open_lost = false;    // the open utterance was lost: ignore the rest of it
  int64_t fed = 0;           // next sample of the open utterance to feed
  bool ended = false;
  actor_meter meter;
  std::string latest_text;  // the newest partial or final text, for the dashboard
  std::string tenant;       // reported with the text: net/ shows it only to this tenant
  // Sample index of the oldest audio still usable (history_ms back, or the open utterance's
  // unfed part); history[0] (history_base) may be older: the front is dropped in batches.
  int64_t history_start = 0;
  // Flow control (channel_progress.hpp): reports asked for, messages taken, last report.
  bool progress = false;
  uint64_t taken = 0;
  int64_t reported_received = 0;
  int64_t reported_pending_ms = -1;
  bool reported_caught_up = false;
  uint64_t reported_taken = 0;
  int64_t consumed = 0;  // 16 kHz sample before which the recognizer is done (see pending_ms)
  int64_t input_samples = 0;  // samples taken in at the channel's own rate
};

using self_ptr = channel_actor_type::pointer;
using state_ptr = std::shared_ptr<channel>;

// CAF lets a typed actor send() only to typed actors; the subscriber is dynamically typed (a
// network session, a file job, a test). Sent with the channel as the sender all the same.
template <class... Ts>
void to_subscriber(self_ptr self, const state_ptr& st, Ts&&... xs) {
  caf::send_as(caf::actor_cast<caf::actor>(self), st->subscriber, std::forward<Ts>(xs)...);
}

void send_error(self_ptr self, const state_ptr& st, int64_t utt, const std::string& why) {
  transcript_event ev;
  ev.channel = st->id;
  ev.utterance = utt;
  ev.is_final = utt >= 0;
  ev.error = why;
  to_subscriber(self, st, std::move(ev));
  st->meter.count("errors");
}

// Finals go out in utterance order: a short utterance that finishes before a longer earlier
// one waits for it.
// Post-processing of finals happens here, in utterance order too: redaction carries a context
// from one final of the channel to the next (a card read over several utterances).
void flush_finals(self_ptr self, const state_ptr& st) {
  while (!st->utterances.empty() && st->utterances.begin()->second.final_event) {
    auto& ev = *st->utterances.begin()->second.final_event;
    if (!ev.error.empty()) {  // a lost utterance: its error, in its place; no text to post-process
      to_subscriber(self, st, std::move(ev));
      st->utterances.erase(st->utterances.begin());
      continue;
    }
    apply_postproc(*st->res, st->pipe->post, ev, &st->pipe->redaction);
    if (!ev.display_text.empty()) st->latest_text = ev.display_text;
    // Debug only (never info: transcripts stay out of normal logs); the text is already redacted.
    spdlog::debug("channel {}: final {}: \"{}\" ({} redacted spans)", st->id, ev.utterance, ev.display_text,
                  ev.redactions.size());
    to_subscriber(self, st, std::move(ev));
    st->utterances.erase(st->utterances.begin());
  }
}

// The redaction state a partial of `utterance` reads: the channel's, or, while an earlier
// utterance's final is still to come (its context not known yet: it may end in a card number),
// one as if that final had masked a number that goes on here: every digit in the partial is
// masked, the single digit words it starts with too.
moe::postproc::redaction_carry partial_carry(const state_ptr& st, int64_t utterance) {
  auto c = st->pipe->redaction;
  if (!st->utterances.empty() && st->utterances.begin()->first < utterance) {
    constexpr auto unknown = moe::postproc::redaction_kind::unfinished_number;
    c.open = true;
    c.kind = unknown;
    c.number_seen = true;
    c.finals_left = std::max(c.finals_left, 1);
    c.until_ms = std::numeric_limits<int64_t>::max();
    c.trailing_digits = std::max(c.trailing_digits, 1);
    c.trailing_masked = true;
    c.trailing_kind = unknown;
    c.trailing_end_ms = std::numeric_limits<int64_t>::max() / 2;  // "just now", whatever the partial's times
  }
  return c;
}

// Audio taken in that the recognizer has not finished with: from the oldest utterance still
// waiting for logits (up to what its logits cover) to the newest sample; none when every
// utterance has its final (silence is done with once the endpointer has seen it). The point
// never moves back: an utterance whose start the VAD confirms late is fed its first part again
// from the history (bounded by history_ms), which is not new audio to hold the sender back for.
int64_t pending_ms(const state_ptr& st) {
  int64_t consumed = st->received;
  for (const auto& [id, u] : st->utterances) {
    if (u.final_event) continue;
    consumed = std::max(u.start_sample, u.recognized_to);
    break;
  }
  st->consumed = std::max(st->consumed, consumed);
  // Taken in is counted at the input rate, before resampling: it matches the durations the
  // subscriber counts for what it sent (a resampler's output per message varies with its delay
  // line), and audio held in the resampler is audio not recognized yet.
  const int64_t taken_ms =
      st->pipe->sample_rate > 0 ? st->input_samples * 1000 / st->pipe->sample_rate : st->received / samples_per_ms;
  return std::max<int64_t>(0, taken_ms - st->consumed / samples_per_ms);
}

// Whether the recognizer has made all it can of the audio taken (channel_progress.hpp): no
// utterance waits for its final, and the open one has logits for every whole attention chunk
// its features make. A chunk is made once its last input frame is there
// (moe::subsampled_length), whoever computes it (a lane, the batcher), at whatever batching.
bool caught_up(const state_ptr& st) {
  const int64_t chunk = st->res->window.chunk_frames;
  for (const auto& [id, u] : st->utterances) {
    if (u.final_event) continue;
    if (u.features_done) return false;  // its last chunk and its final are still to come
    const int64_t made = chunk > 0 ? moe::subsampled_length(u.fbank_frames_sent) / chunk * chunk : 0;
    if (u.frames_answered < made) return false;
  }
  return true;
}

void report_progress(self_ptr self, const state_ptr& st) {
  const int64_t pending = pending_ms(st);
  const bool done = caught_up(st);
  st->reported_received = st->received;
  st->reported_pending_ms = pending;
  st->reported_caught_up = done;
  st->reported_taken = st->taken;
  to_subscriber(self, st, progress_atom::value, st->taken, pending, done);
}

// After an audio message (see channel_progress.hpp for when a report goes).
void progress_after_audio(self_ptr self, const state_ptr& st) {
  ++st->taken;
  if (!st->progress) return;
  if (st->received - st->reported_received >= progress_step_ms * samples_per_ms || self->mailbox().empty())
    report_progress(self, st);
}

// After any message that is not audio: the report an audio message left out because another
// message was behind it in the mailbox (the report timer, logits), once the mailbox is empty.
// Without it a lock-step subscriber (Vosk) could wait for ever for the count of its last message.
void progress_when_idle(self_ptr self, const state_ptr& st) {
  if (st->progress && st->taken != st->reported_taken && self->mailbox().empty()) report_progress(self, st);
}

// After logits (or utterances lost): a report when the recognized point moved or the
// recognizer caught up, else when an audio message is still unreported and nothing waits.
void progress_after_logits(self_ptr self, const state_ptr& st) {
  if (st->ended && st->utterances.empty()) return;  // drained: the subscriber has been told
  if (st->progress && (pending_ms(st) != st->reported_pending_ms || caught_up(st) != st->reported_caught_up))
    report_progress(self, st);
  else
    progress_when_idle(self, st);
}

void maybe_drained(self_ptr self, const state_ptr& st) {
  flush_finals(self, st);
  if (!st->ended || !st->utterances.empty()) return;
  // The supervisor first: it frees the slot before the subscriber hears and asks for another;
  // the metrics actor's last report too, so what the subscriber reads next counts this channel.
  if (st->supervisor) self->send(st->supervisor, drained_atom::value, st->id);
  if (st->metrics) {
    auto r = st->meter.take(0);
    r.gone = true;
    r.tenant = st->tenant;  // its last counts (the final's among them) are the tenant's too
    self->send(st->metrics, std::move(r));
  }
  to_subscriber(self, st, drained_atom::value, st->id);
  self->quit();
}

// An utterance that was lost (no decoder, a failed step, a restarted batcher): its error is its
// final and goes out in its place, after the finals of earlier utterances still running, so a
// subscriber reads one final per utterance in utterance order whatever fails. (An error sent at
// once overtook them: a burst-fed SIP channel once showed its finals out of order.)
void lose_utterance(self_ptr self, const state_ptr& st, int64_t utt, const std::string& why) {
  transcript_event ev;
  ev.channel = st->id;
  ev.utterance = utt;
  ev.is_final = true;
  ev.error = why;
  st->meter.count("errors");
  auto& u = st->utterances[utt];
  u.decoder.reset();
  u.claim.release_all();
  u.final_event = std::move(ev);
  flush_finals(self, st);
}

// A new utterance with its decoder. When the decoder cannot be made the utterance is reported
// lost (lose_utterance): nothing waits for it.
int64_t open_utterance(self_ptr self, const state_ptr& st, int64_t start_sample, bool& lost) {
  const int64_t id = st->next_utterance++;
  // A tenant's new hotwords or redaction rules reach a live stream at its next utterance.
  if (st->pipe->refresh_tenant(*st->res))
    spdlog::debug("channel {}: tenant {} rules updated (version {})", st->id, st->pipe->tenant, st->pipe->tenant_version);
  st->fbank.reset();
  st->meter.count("utterances");
  auto dec = st->pipe->make_decoder(*st->res);
  lost = !dec;
  if (!dec) {
    spdlog::warn("channel {}: utterance {} has no decoder: {}", st->id, id, dec.error().message);
    lose_utterance(self, st, id, "cannot create the decoder: " + dec.error().message);
    return id;
  }
  auto& u = st->utterances[id];
  u.start_sample = start_sample;
  u.offline = st->pipe->offline;
  u.prepared = st->pipe->stream;  // what make_decoder read
  u.decoder.emplace(std::move(*dec));
  // Placed now, on the lane with the least work outstanding: each utterance on its own.
  auto where = st->lanes->place(lane_set::open_cost);
  u.lane = where.index;
  u.compute = std::move(where.lane);
  u.claim = lane_claim(st->lanes, where.index, lane_set::open_cost);
  return id;
}

void send_features(self_ptr self, const state_ptr& st, int64_t id, std::vector<float> frames, bool last) {
  auto& u = st->utterances.at(id);
  const auto n_mels = static_cast<int64_t>(st->fbank.num_mels());
  const auto n_frames = static_cast<int64_t>(frames.size()) / n_mels;
  const bool first = !u.features_started;
  u.features_started = true;
  u.fbank_frames_sent += n_frames;
  u.claim.sent(n_frames);
  const auto now = clock::now();
  u.sent.emplace_back(u.fbank_frames_sent, now);
  if (last) {
    u.features_done = true;
    u.ended = now;
  }
  feature_chunk c{st->id, id, std::move(frames), last, u.offline};
  if (first && u.offline && u.decoder && st->lanes->decodes()) {
    // Offline: the lane decodes the utterance right after its steps (on the lanes, in parallel,
    // rather than every utterance of a file on this thread). From here on only the lane uses it.
    // The decoder travels with the stream options it points into, so that it outlives neither
    // them nor this channel (which may stop while the lane still holds it).
    struct handed {
      std::shared_ptr<const moe::prepared_stream> prepared;
      moe::ctc_decoder decoder;
    };
    auto box = std::make_shared<handed>(handed{u.prepared, std::move(*u.decoder)});
    c.decoder = std::shared_ptr<moe::ctc_decoder>(box, &box->decoder);
    c.partials = st->partials;
    u.decoder.reset();
    u.lane_decodes = true;
  }
  self->send(u.compute, features_atom::value, std::move(c));
}

// Feeds the open utterance's samples [fed, to) from the history.
void feed(self_ptr self, const state_ptr& st, int64_t to, bool last) {
  std::vector<float> frames;
  if (to > st->fed) {
    const auto a = static_cast<std::size_t>(st->fed - st->history_base);
    const auto b = static_cast<std::size_t>(to - st->history_base);
    frames = st->fbank.accept(std::span<const float>(st->history).subspan(a, b - a));
    st->fed = to;
  }
  if (!frames.empty() || last) send_features(self, st, st->open, std::move(frames), last);
}

void on_samples(self_ptr self, const state_ptr& st, const std::vector<float>& x16, bool end_of_stream) {
  st->history.insert(st->history.end(), x16.begin(), x16.end());
  st->received += static_cast<int64_t>(x16.size());
  st->meter.count("audio_ms", static_cast<double>(x16.size()) / samples_per_ms);
  auto events = st->pipe->endpoint.accept(x16);
  if (end_of_stream) {
    auto tail = st->pipe->endpoint.finish();
    events.insert(events.end(), tail.begin(), tail.end());
  }
  for (const auto& ev : events) {
    if (ev.kind == dsp::endpoint_kind::utterance_start) {
      st->open = open_utterance(self, st, ev.sample, st->open_lost);
      st->fed = std::max(ev.sample, st->history_start);
    } else {
      if (st->open >= 0 && !st->open_lost) feed(self, st, std::max(ev.sample, st->fed), true);
      st->open = -1;
      st->open_lost = false;
    }
  }
  if (st->open >= 0 && !st->open_lost) feed(self, st, st->received, false);
  // Keep history_ms of audio, and all of the open utterance's unfed part.
  int64_t keep_from = st->received - history_ms * samples_per_ms;
  if (st->open >= 0) keep_from = std::min(keep_from, st->fed);
  st->history_start = std::max(st->history_start, keep_from);
  // The dead front goes only once it is as long as what is kept, so each sample is moved once on
  // average: erasing it on every packet moved the whole 3 s history per 20 ms packet.
  const int64_t dead = st->history_start - st->history_base;
  if (dead > 0 && 2 * dead >= static_cast<int64_t>(st->history.size())) {
    st->history.erase(st->history.begin(), st->history.begin() + dead);
    st->history_base = st->history_start;
    st->meter.count("history_moved_samples", static_cast<double>(st->history.size()));
  }
}

void on_logits(self_ptr self, const state_ptr& st, logits_chunk& c) {
  auto it = st->utterances.find(c.utterance);
  if (it == st->utterances.end() || it->second.final_event) return;  // unknown, or already over
  auto& u = it->second;
  const auto now = clock::now();
  if (!c.error.empty() || (u.lane_decodes && !c.decoded)) {
    // (A lane holding the decoder answers with decoded results; logits instead could not be
    // decoded here: the utterance is lost, with that said, rather than given an empty final.)
    if (st->open == c.utterance) st->open_lost = true;
    lose_utterance(self, st, c.utterance,
                   !c.error.empty() ? c.error : "the lane holding this utterance's decoder answered with logits");
    maybe_drained(self, st);
    return;
  }
  const auto n = c.decoded ? c.frames
                 : c.vocab > 0 ? static_cast<int32_t>(c.logits.size() / static_cast<std::size_t>(c.vocab))
                               : 0;
  if (!c.decoded && u.decoder && n > 0) {
    if (auto ok = u.decoder->accept(c.logits, n); !ok) {
      if (st->open == c.utterance) st->open_lost = true;
      lose_utterance(self, st, c.utterance, ok.error().message);
      maybe_drained(self, st);
      return;
    }
  }
  u.claim.answered(static_cast<int64_t>(n) * st->res->model->arch().subsampling);
  u.frames_answered = std::max(u.frames_answered, static_cast<int64_t>(c.first_frame) + n);
  // Latency: from when the newest features these logits needed were sent.
  const int64_t needed = (c.first_frame + n) * st->res->model->arch().subsampling;
  clock::time_point newest{};
  while (!u.sent.empty() && (u.sent.front().first <= needed || c.last)) {
    newest = u.sent.front().second;
    u.sent.pop_front();
  }
  const int64_t offset_ms = u.start_sample / samples_per_ms;
  u.recognized_to = std::max(u.recognized_to, u.start_sample + (c.first_frame + n) *
                                                                 static_cast<int64_t>(st->res->decoder.frame_ms) *
                                                                 samples_per_ms);
  auto to_event = [&](const moe::decode_result& r, bool final) {
    transcript_event ev;
    ev.channel = st->id;
    ev.utterance = c.utterance;
    ev.is_final = final;
    ev.text = r.text;
    ev.start_ms = offset_ms;
    ev.end_ms = final && u.end_sample >= 0
                    ? u.end_sample / samples_per_ms
                    : offset_ms + (c.first_frame + n) * static_cast<int64_t>(st->res->decoder.frame_ms);
    for (const auto& w : r.words) ev.words.push_back({w.word, w.start_ms + offset_ms, w.end_ms + offset_ms, w.confidence});
    ev.alternatives = to_alternative_events(r.alternatives, offset_ms);
    // Before anything leaves the channel: display form and redaction (partials here, finals in
    // flush_finals, in utterance order).
    if (!final) {
      auto carry = partial_carry(st, c.utterance);
      apply_postproc(*st->res, st->pipe->post, ev, &carry);
    }
    return ev;
  };
  // What the lane decoded (lane_decodes), as the channel's own decoder would give it.
  auto lane_result = [&c] {
    moe::decode_result r;
    r.text = c.text;
    for (const auto& w : c.words) r.words.push_back({w.word, w.start_ms, w.end_ms, w.confidence});
    for (const auto& a : c.alternatives) {
      moe::decode_alternative alt{a.text, {}, 0, a.confidence};
      for (const auto& w : a.words) alt.words.push_back({w.word, w.start_ms, w.end_ms, w.confidence});
      r.alternatives.push_back(std::move(alt));
    }
    return r;
  };
  if (c.last) {
    u.claim.release_all();
    const auto r = c.decoded ? lane_result() : u.decoder ? u.decoder->finalize() : moe::decode_result{};
    u.final_event = to_event(r, true);
    // Final latency is a live figure: a segment's "latency" is only its wait behind other work.
    if (!u.offline) st->meter.histogram(latency_key::final_result).add(ms_between(u.ended, now));
    st->meter.count("finals");
    maybe_drained(self, st);
    return;
  }
  if (st->partials && (u.decoder || c.decoded)) {
    // One partial per model step (every 640 ms chunk at most), changed or not: clients count
    // on a steady beat.
    const auto r = c.decoded ? lane_result() : u.decoder->partial();
    auto ev = to_event(r, false);
    u.last_partial = ev.text;
    st->latest_text = ev.display_text;
    to_subscriber(self, st, std::move(ev));
    if (newest != clock::time_point{}) st->meter.histogram(latency_key::partial).add(ms_between(newest, now));
    st->meter.count("partials");
  }
}

}  // namespace

channel_actor_type::behavior_type channel_actor(channel_actor_type::pointer self, std::shared_ptr<const engine_resources> res,
                            channel_id id, std::shared_ptr<channel_pipeline> pipeline, bool partials,
                            std::string tenant, caf::actor subscriber, std::shared_ptr<lane_set> lanes,
                            metrics_actor_type metrics, supervisor_actor_type supervisor) {
  auto st = std::make_shared<channel>(channel{res, id, std::move(pipeline), partials, std::move(subscriber),
                                              std::move(lanes), std::move(metrics), std::move(supervisor),
                                              dsp::streaming_fbank(res->fbank), {}, 0, {}, 0, 0, -1, false, 0, false,
                                              actor_meter("channel/" + std::to_string(id), "channel")});
  st->tenant = std::move(tenant);
  if (st->pipe->offline && res->cfg.engine.offline_nice > 0) {
    // Only a detached actor's thread is its own (the supervisor spawns offline channels so): a
    // channel on the shared scheduler must not lower a thread other actors run on.
    if (!self->getf(caf::abstract_actor::is_detached_flag)) {
      st->meter.count("nice_skipped");
    } else {
      if (!nice_current_thread(res->cfg.engine.offline_nice)) st->meter.count("nice_failed");
      // Named after the renice: whoever finds the name finds the thread's final nice value.
      name_current_thread("sluice-offline");
    }
  }
  if (st->metrics) self->delayed_send(self, std::chrono::milliseconds(res->cfg.engine.report_ms), report_atom::value);
  auto samples_in = [self, st](const std::vector<float>& x) {
    if (st->ended) {
      send_error(self, st, -1, "audio after the end of the stream");
      return;
    }
    st->input_samples += static_cast<int64_t>(x.size());
    auto y = st->pipe->to_model_rate(x);
    if (!y) {
      send_error(self, st, -1, y.error().message);
      return;
    }
    on_samples(self, st, *y, false);
  };
  return {
      [self, st, samples_in](samples_atom, const std::vector<float>& x) {
        actor_meter::scope busy(st->meter);
        if (st->pipe->codec != channel_codec::f32)
          send_error(self, st, -1, "f32 samples sent to a channel opened for another codec");
        else
          samples_in(x);
        progress_after_audio(self, st);
      },
      [self, st, samples_in](audio_atom, const std::vector<uint8_t>& bytes) {
        actor_meter::scope busy(st->meter);
        auto x = st->pipe->decode(bytes);
        if (!x)
          send_error(self, st, -1, std::string("bad audio (") + to_string(x.error().code) + "): " + x.error().message);
        else
          samples_in(*x);
        progress_after_audio(self, st);
      },
      [self, st](segment_atom, std::vector<float>& x16, int64_t start_sample) {
        actor_meter::scope busy(st->meter);
        bool lost = false;
        const int64_t u = open_utterance(self, st, start_sample, lost);
        if (lost) {
          maybe_drained(self, st);
          return;
        }
        st->utterances[u].end_sample = start_sample + static_cast<int64_t>(x16.size());
        // A segment is a whole utterance given at once: offline work whatever the request said.
        st->utterances[u].offline = true;
        send_features(self, st, u, st->res->fbank->compute(x16), true);
        st->meter.count("audio_ms", static_cast<double>(x16.size()) / samples_per_ms);
      },
      [self, st](end_atom) {
        actor_meter::scope busy(st->meter);
        if (st->ended) return;
        auto tail = st->pipe->flush();
        on_samples(self, st, tail ? *tail : std::vector<float>{}, true);
        st->ended = true;
        maybe_drained(self, st);
      },
      [self, st](abort_atom) {
        // Nobody will read the results: spend no more compute on them. The supervisor and the
        // batcher monitor the channel, so its normal exit is what tells them to forget it.
        st->meter.count("aborted");
        spdlog::debug("channel {}: aborted with {} utterances in flight", st->id, st->utterances.size());
        if (st->metrics) {
          auto r = st->meter.take(0);
          r.gone = true;
          r.tenant = st->tenant;
          self->send(st->metrics, std::move(r));
        }
        // Release the lanes' claims now, before whoever monitors this channel hears it is down:
        // the state itself lives on with the behavior until CAF destroys it.
        st->utterances.clear();
        self->quit();
      },
      [self, st](logits_atom, logits_chunk& c) {
        actor_meter::scope busy(st->meter);
        on_logits(self, st, c);
        progress_after_logits(self, st);
      },
      [self, st](progress_atom) {
        st->progress = true;
        report_progress(self, st);
      },
      [self, st](batcher_atom, int32_t index, const caf::actor_addr& dead) {
        // Lane `index` (or the batcher), actor `dead`, went down and was restarted: what it held
        // is gone. Utterances on its successor, or on other lanes, go on.
        std::vector<int64_t> lost;
        for (const auto& [id, u] : st->utterances)
          if (!u.final_event && u.lane == static_cast<std::size_t>(index) && u.compute.address() == dead)
            lost.push_back(id);  // a finished one's final still goes out, in order
        for (const auto id : lost) {
          if (st->open == id) st->open_lost = true;
          lose_utterance(self, st, id, "the engine restarted the lane (or batcher) it ran on: this utterance was lost");
        }
        maybe_drained(self, st);
        progress_after_logits(self, st);  // the lost utterances are no longer pending
      },
      [self, st](report_atom) {
        if (st->metrics) {
          auto r = st->meter.take(static_cast<int64_t>(self->mailbox().size()));
          r.text = st->latest_text;
          r.tenant = st->tenant;
          self->send(st->metrics, std::move(r));
        }
        self->delayed_send(self, std::chrono::milliseconds(st->res->cfg.engine.report_ms), report_atom::value);
        progress_when_idle(self, st);
      },
  };
}

}  // namespace sluice::actors
