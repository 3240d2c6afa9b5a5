#pragma once
/// Every message the engine's actors exchange, as plain structs with inspect(), so that any of
/// them can cross a process boundary through CAF's middleman (engine_system_config registers
/// them all). Token blocks and expert replies travel as shared buffers: inside a process only a
/// reference count moves (the sender does not touch a buffer again until the reply is in);
/// across processes inspect() writes their contents, FP8 rows as bytes plus scales.

#include <caf/all.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "actors/refusal.hpp"
#include "moe/token_block.hpp"

namespace sluice::moe {
class ctc_decoder;
}

namespace sluice::actors {

using channel_id = uint64_t;

// -- atoms (CAF 0.17: at most 10 characters) ----------------------------------------------
using audio_atom = caf::atom_constant<caf::atom("audio")>;        ///< encoded audio for a channel
using samples_atom = caf::atom_constant<caf::atom("samples")>;    ///< f32 samples at the channel's rate
using segment_atom = caf::atom_constant<caf::atom("segment")>;    ///< one 16 kHz utterance (files)
using end_atom = caf::atom_constant<caf::atom("end")>;            ///< no more audio for the channel
using features_atom = caf::atom_constant<caf::atom("features")>;  ///< channel -> batcher
using logits_atom = caf::atom_constant<caf::atom("logits")>;      ///< batcher -> channel
using block_atom = caf::atom_constant<caf::atom("block")>;        ///< batcher -> expert / spillway
using hot_atom = caf::atom_constant<caf::atom("hot")>;            ///< batcher -> spillway: replica set
using flush_atom = caf::atom_constant<caf::atom("flush")>;        ///< batcher timer
using report_atom = caf::atom_constant<caf::atom("report")>;      ///< actor -> metrics, and timers
using snapshot_atom = caf::atom_constant<caf::atom("snapshot")>;  ///< ask for a metrics snapshot
using open_atom = caf::atom_constant<caf::atom("open")>;          ///< ask the supervisor for a channel
using shards_atom = caf::atom_constant<caf::atom("shards")>;      ///< supervisor -> batcher: handles
using batcher_atom = caf::atom_constant<caf::atom("batcher")>;    ///< supervisor -> channels: a lane (or the batcher) restarted
using drain_atom = caf::atom_constant<caf::atom("drain")>;        ///< graceful shutdown
using drained_atom = caf::atom_constant<caf::atom("drained")>;    ///< a channel has finished
using load_atom = caf::atom_constant<caf::atom("load")>;          ///< batcher -> supervisor: queue wait
using drop_atom = caf::atom_constant<caf::atom("drop")>;          ///< channel gone: forget its stream
using abort_atom = caf::atom_constant<caf::atom("abort")>;        ///< subscriber gone: stop the channel now
using reload_atom = caf::atom_constant<caf::atom("reload")>;      ///< tenant watcher: reread tenant files now
using progress_atom = caf::atom_constant<caf::atom("progress")>;  ///< flow control (actors/channel_progress.hpp)

struct word_event {
  std::string word;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  float confidence = 0;
};

/// One reading of an utterance among the n best its decoder kept (decoder.alternatives, a
/// client's ask), on finals only: lexical `text` and `words` (as spoken; masked as the final's
/// are when redaction is on) and, after post-processing, `display_text`. `confidence`: the
/// reading's share of the probability of the readings the search kept (moe::decode_alternative).
struct alternative_event {
  std::string text;
  float confidence = 0;
  std::vector<word_event> words;
  std::string display_text;
};

/// Features of one utterance of one channel, channel -> batcher.
struct feature_chunk {
  channel_id channel = 0;
  int64_t utterance = 0;
  std::vector<float> frames;  ///< f32 [n, n_mels]: raw log-mel (dsp/ fbank)
  bool last = false;          ///< the utterance ends after these frames
  /// Offline work (a file or upload segment): yields to live streams in a micro-batch when
  /// [engine] live_priority is on.
  bool offline = false;
  /// On an utterance's first chunk to a lane ([engine] lane_decoding): the utterance's CTC
  /// decoder, handed over. The lane then decodes the utterance itself, right after each step,
  /// and answers with decoded results (logits_chunk::decoded) instead of logits; the channel no
  /// longer has a decoder for it. In process only (lanes are local; it is not serialized):
  /// lane decoding must not be used with a lane in another process.
  std::shared_ptr<moe::ctc_decoder> decoder;
  bool partials = false;  ///< with a decoder: a partial result after every step
};

/// Logits of one step for one stream, batcher -> channel.
struct logits_chunk {
  channel_id channel = 0;
  int64_t utterance = 0;
  int64_t first_frame = 0;  ///< subsampled frame index inside the utterance
  int32_t vocab = 0;
  std::vector<float> logits;  ///< f32 [n, vocab]
  bool last = false;          ///< the utterance's final frames
  std::string error;          ///< non-empty: the utterance was lost (its step failed)
  /// Decoded by the lane (feature_chunk::decoder): no logits; `frames` output frames were
  /// decoded, and `text`/`words` are the final result when `last`, else a partial one (empty
  /// unless partials were asked for). Word times as the decoder gives them.
  bool decoded = false;
  int32_t frames = 0;
  std::string text;
  std::vector<word_event> words;
  std::vector<alternative_event> alternatives;  ///< with `decoded` and `last`: the decoder's n best
};

/// A stretch of audio whose words were masked (moe/postproc redaction), for a recorder to bleep.
struct redaction_span {
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  std::string kind;  ///< card | expiry | cvv | ssn | account | email | word | unfinished_number
};

/// A partial or final result of one utterance, channel -> subscriber. Times are ms from the
/// start of the channel's audio.
/// Two forms (moe/postproc/postprocessor.hpp): lexical (`text`, `words`: as spoken, lower-case)
/// and display (`display_text`, `display_words`: numbers written, punctuated, cased). When the
/// stream's redaction is on, masked data is replaced by its mask ("[card]") in BOTH forms, and
/// `redactions` lists the masked time spans. With post-processing off, the display form equals
/// the lexical one.
struct transcript_event {
  channel_id channel = 0;
  int64_t utterance = 0;
  bool is_final = false;
  std::string text;
  std::vector<word_event> words;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  std::string error;  ///< non-empty: the utterance could not be finished; the channel goes on
  std::string display_text;
  std::vector<word_event> display_words;  ///< a written token per entry (may hold blanks: "March 10th")
  std::vector<redaction_span> redactions;
  /// Finals of a stream with alternatives (its own ask, else the engine's [decoder] alternatives):
  /// the n best readings, best first (the first is `text` itself); empty otherwise, in partials,
  /// and in a lost utterance's error.
  std::vector<alternative_event> alternatives;
};

/// How the wire carries a block's rows.
enum class block_encoding : uint8_t { f32 = 0, fp8_e4m3 = 1 };

/// Rows of a token block in FP8 E4M3: q u8 [n_rows * d], one scale per 128 values.
struct fp8_rows {
  std::vector<uint8_t> q;
  std::vector<float> scales;
};

/// A token block on its way to an expert shard. `reply` is the buffer the shard writes its
/// output into (in process; a remote shard makes its own).
struct block_msg {
  block_encoding encoding = block_encoding::f32;
  std::shared_ptr<moe::token_block> block;  ///< header and pairs; rows only when f32
  std::shared_ptr<fp8_rows> fp8;            ///< rows when fp8_e4m3
  std::shared_ptr<moe::expert_output> reply;
  /// Bytes this block puts on the wire (header excluded): rows, scales and pairs.
  int64_t wire_bytes() const;
};

struct reply_msg {
  std::shared_ptr<moe::expert_output> out;
  int64_t wire_bytes() const { return out ? static_cast<int64_t>(out->out.size() * sizeof(float)) : 0; }
};

/// One actor's figures since its last report, actor -> metrics. Counters are deltas; gauges
/// (mailbox, queue) are current values; `values` and `histograms` are kind-specific.
struct actor_report {
  std::string name;  ///< unique, e.g. "expert/1"
  std::string kind;  ///< channel, batcher, expert, spillway, supervisor
  int64_t mailbox = 0;
  int64_t messages = 0;
  int64_t busy_ns = 0;
  int64_t interval_ns = 0;
  /// Steady-clock time (ns since its epoch) the report was taken: everything the actor did
  /// before then is in it. Lets a reader wait for reports newer than an event.
  int64_t taken_ns = 0;
  std::vector<std::string> keys;  ///< counters (summed by the metrics actor)
  std::vector<double> counts;
  std::vector<std::string> gauge_keys;  ///< latest values
  std::vector<double> gauges;
  std::vector<std::string> hist_keys;  ///< latency histograms: bucket counts (latency_histogram)
  std::vector<std::vector<int64_t>> hists;
  std::vector<double> hist_sums;  ///< ms, per histogram
  std::string text;               ///< channels: the newest partial or final text
  std::string tenant;             ///< channels: whose stream it is (empty: no tenant)
  bool gone = false;  ///< the actor has stopped: drop it from the live view
};

/// A channel's typed interface (actors/channel_actor.hpp says what each message means): what
/// its subscriber, its feeder, the lanes (or the batcher) and the supervisor may send it. A
/// message it has no handler for, sent through this handle, does not build.
using channel_actor_type =
    caf::typed_actor<caf::reacts_to<samples_atom, std::vector<float>>, caf::reacts_to<audio_atom, std::vector<uint8_t>>,
                     caf::reacts_to<segment_atom, std::vector<float>, int64_t>, caf::reacts_to<end_atom>,
                     caf::reacts_to<abort_atom>, caf::reacts_to<logits_atom, logits_chunk>, caf::reacts_to<progress_atom>,
                     caf::reacts_to<batcher_atom, int32_t, caf::actor_addr>, caf::reacts_to<report_atom>>;

/// Why a channel was refused or failed, supervisor -> caller. `code` says what kind of refusal
/// it is (callers decide on it, never on `reason`, which is for people).
struct open_reply {
  bool ok = false;
  std::string reason;
  channel_id channel = 0;
  channel_actor_type handle;
  refusal code = refusal::none;
};

/// What the caller asks of a new channel.
struct channel_request {
  std::string label;
  int sample_rate = 16000;       ///< Hz of the samples/audio messages
  std::string codec = "f32";     ///< f32 (samples_atom) | pcm_s16le | mulaw | alaw | opus (audio_atom)
  std::vector<std::string> hotwords;  ///< "phrase" or "phrase weight"
  bool partials = true;
  std::string tenant;  ///< who the stream belongs to (net/auth); empty: no tenant (in-process)
  /// Offline work (a file or an upload, fed as segments): yields to live streams, both in the
  /// lanes' micro-batches ([engine] live_priority) and for the CPU ([engine] offline_nice).
  bool offline = false;
  /// Alternative readings on finals (decoder.alternatives for this stream, at most
  /// moe::decoder_options::max_alternatives); -1: the engine's [decoder] alternatives.
  int alternatives = -1;
};

// -- inspect ---------------------------------------------------------------------------------

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, feature_chunk& x) {
  // `decoder` stays behind: it is a live object of this process (see feature_chunk).
  return f(caf::meta::type_name("feature_chunk"), x.channel, x.utterance, x.frames, x.last, x.offline, x.partials);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, logits_chunk& x) {
  return f(caf::meta::type_name("logits_chunk"), x.channel, x.utterance, x.first_frame, x.vocab, x.logits, x.last,
           x.error, x.decoded, x.frames, x.text, x.words, x.alternatives);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, word_event& x) {
  return f(caf::meta::type_name("word_event"), x.word, x.start_ms, x.end_ms, x.confidence);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, alternative_event& x) {
  return f(caf::meta::type_name("alternative_event"), x.text, x.confidence, x.words, x.display_text);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, redaction_span& x) {
  return f(caf::meta::type_name("redaction_span"), x.start_ms, x.end_ms, x.kind);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, transcript_event& x) {
  return f(caf::meta::type_name("transcript_event"), x.channel, x.utterance, x.is_final, x.text, x.words, x.start_ms,
           x.end_ms, x.error, x.display_text, x.display_words, x.redactions, x.alternatives);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, actor_report& x) {
  return f(caf::meta::type_name("actor_report"), x.name, x.kind, x.mailbox, x.messages, x.busy_ns, x.interval_ns,
           x.taken_ns, x.keys, x.counts, x.gauge_keys, x.gauges, x.hist_keys, x.hists, x.hist_sums, x.text, x.tenant, x.gone);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, open_reply& x) {
  return f(caf::meta::type_name("open_reply"), x.ok, x.reason, x.channel, x.handle, x.code);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, channel_request& x) {
  return f(caf::meta::type_name("channel_request"), x.label, x.sample_rate, x.codec, x.hotwords, x.partials,
           x.tenant, x.offline, x.alternatives);
}

// Shared buffers: written out by value, read back into fresh buffers. An absent buffer is
// written as an empty one.
template <class Inspector>
typename std::enable_if<Inspector::reads_state, typename Inspector::result_type>::type inspect(
    Inspector& f, block_msg& x) {
  static moe::token_block empty_block;
  static fp8_rows empty_fp8;
  auto& b = x.block ? *x.block : empty_block;
  auto& q = x.fp8 ? *x.fp8 : empty_fp8;
  auto enc = static_cast<uint8_t>(x.encoding);
  return f(caf::meta::type_name("block_msg"), enc, b.micro_batch, b.step, b.layer, b.shard, b.d, b.rows, b.pair_row,
           b.pair_expert, b.pair_weight, q.q, q.scales);
}
template <class Inspector>
typename std::enable_if<Inspector::writes_state, typename Inspector::result_type>::type inspect(
    Inspector& f, block_msg& x) {
  x.block = std::make_shared<moe::token_block>();
  x.fp8 = std::make_shared<fp8_rows>();
  x.reply = std::make_shared<moe::expert_output>();
  auto& b = *x.block;
  uint8_t enc = 0;
  auto r = f(caf::meta::type_name("block_msg"), enc, b.micro_batch, b.step, b.layer, b.shard, b.d, b.rows,
             b.pair_row, b.pair_expert, b.pair_weight, x.fp8->q, x.fp8->scales);
  x.encoding = enc == 1 ? block_encoding::fp8_e4m3 : block_encoding::f32;
  return r;
}
template <class Inspector>
typename std::enable_if<Inspector::reads_state, typename Inspector::result_type>::type inspect(
    Inspector& f, reply_msg& x) {
  static moe::expert_output empty;
  auto& o = x.out ? *x.out : empty;
  return f(caf::meta::type_name("reply_msg"), o.micro_batch, o.step, o.layer, o.shard, o.d, o.out);
}
template <class Inspector>
typename std::enable_if<Inspector::writes_state, typename Inspector::result_type>::type inspect(
    Inspector& f, reply_msg& x) {
  x.out = std::make_shared<moe::expert_output>();
  auto& o = *x.out;
  return f(caf::meta::type_name("reply_msg"), o.micro_batch, o.step, o.layer, o.shard, o.d, o.out);
}

}  // namespace sluice::actors
