#include "net/protocols/deepgram_protocol.hpp"

#include <chrono>
#include <span>
#include <tuple>

#include <openssl/evp.h>

#include "net/calls/call_json.hpp"
#include "net/hex.hpp"
#include "net/json_fields.hpp"
#include "net/protocols/deepgram_rest.hpp"
#include "net/switches/interleave.hpp"
#include "net/switches/switch_json.hpp"

namespace sluice::net {
namespace {

constexpr double ms_per_s = 1000.0;
// Finalized generations still finishing at once: past this a Finalize is a protocol error (a
// client finalizing per turn has one or two; a loop of audio and Finalize would open channels
// without end).
constexpr std::size_t max_finishing_generations = 8;
// How much of an unknown message type an error quotes.
constexpr std::size_t max_quoted_type = 64;

struct md_ctx_free {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

class deepgram_protocol final : public ws_protocol {
 public:
  explicit deepgram_protocol(deepgram_options o)
      : o_(std::move(o)),
        n_(o_.channels),
        width_(o_.encoding == "linear16" ? 2 : 1),
        split_(width_),
        pretty_(o_.punctuate || o_.smart_format),
        sha_(EVP_MD_CTX_new()),
        samples_(static_cast<std::size_t>(n_), 0) {
    if (sha_ && EVP_DigestInit_ex(sha_.get(), EVP_sha256(), nullptr) != 1) sha_.reset();
  }

  std::string_view name() const override { return "deepgram"; }

  std::string accept_subprotocol(std::string_view offered) const override {
    // Browsers cannot set headers: Deepgram's browser client offers "token, <key>".
    return offers_subprotocol(offered, "token") ? "token" : "";
  }

  void on_start(ws_transport& t) override {
    created_ = calls::iso_utc(std::chrono::system_clock::now());
    calls::call_start call;
    call.source = "deepgram";
    call.channel_labels = n_ == 1 ? std::vector<std::string>{"mono"} : std::vector<std::string>{"channel 0", "channel 1"};
    call.metadata = {{"encoding", o_.encoding},       {"sample_rate", o_.sample_rate},
                     {"channels", o_.channels},       {"interim_results", o_.interim_results},
                     {"language", o_.language},       {"smart_format", o_.smart_format || o_.punctuate}};
    t.begin_call(std::move(call));
    request_id_ = t.call();
  }

  void on_text(ws_transport& t, std::string_view text) override {
    auto j = parse_object(text);
    if (!j) return t.fail("protocol", "text messages must be JSON objects with a \"type\"", ws_close::policy);
    const auto it = j->find("type");
    if (it == j->end() || !it->is_string())
      return t.fail("protocol", "a text message without a string \"type\"", ws_close::policy);
    const auto& type = it->get_ref<const std::string&>();
    if (type == "KeepAlive") return;
    if (type == "Finalize") return finalize(t);
    if (type == "CloseStream") return close_stream(t);
    t.fail("protocol",
           "unknown message type \"" + valid_utf8(type.substr(0, max_quoted_type)) +
               (type.size() > max_quoted_type ? "...\"" : "\"") + " (KeepAlive, Finalize, CloseStream)",
           ws_close::policy);
  }

  void on_binary(ws_transport& t, std::vector<uint8_t> bytes) override {
    if (bytes.empty()) return close_stream(t);  // the older way to end a stream
    if (sha_ && EVP_DigestUpdate(sha_.get(), bytes.data(), bytes.size()) != 1) sha_.reset();
    // Whole samples (frames) only; the bytes of a split one wait for the next message. Channels
    // open with the first whole sample, so a message too short for one opens nothing.
    std::vector<std::vector<uint8_t>> out(static_cast<std::size_t>(n_));
    if (n_ == 2) {
      std::tie(out[0], out[1]) = split_.split(bytes);
    } else {
      carry_.insert(carry_.end(), bytes.begin(), bytes.end());
      const std::size_t whole = carry_.size() - carry_.size() % width_;
      out[0].assign(carry_.begin(), carry_.begin() + static_cast<std::ptrdiff_t>(whole));
      carry_.erase(carry_.begin(), carry_.begin() + static_cast<std::ptrdiff_t>(whole));
    }
    if (out[0].empty()) return;
    if (!active_) open_generation(t);
    for (int c = 0; c < n_; ++c) push(t, c, std::move(out[static_cast<std::size_t>(c)]));
  }

  void on_open(ws_transport&, std::size_t, const actors::open_reply&) override {}

  void on_event(ws_transport& t, std::size_t i, const actors::transcript_event& ev) override {
    if (!ev.error.empty()) {
      t.send_text(*error_message(ev.utterance < 0 ? "audio" : "utterance_lost", ev.error));
      return;
    }
    const int c = static_cast<int>(i % static_cast<std::size_t>(n_));
    const int64_t off = offset_ms_[i];
    if (o_.vad_events && ev.utterance != last_utterance_[i]) {
      last_utterance_[i] = ev.utterance;
      t.send_text(to_wire(json{{"type", "SpeechStarted"},
                               {"channel", {c, n_}},
                               {"timestamp", static_cast<double>(ev.start_ms + off) / ms_per_s}}));
    }
    if (!ev.is_final && (!o_.interim_results || ev.text.empty())) return;
    if (ev.is_final) final_sent_[i] = true;
    t.send_text(to_wire(results(ev, c, off, finalizing_[i])));
    if (ev.is_final && o_.utterance_end_ms && !ev.words.empty())
      t.send_text(to_wire(json{{"type", "UtteranceEnd"},
                               {"channel", {c, n_}},
                               {"last_word_end", static_cast<double>(ev.words.back().end_ms + off) / ms_per_s}}));
  }

  void on_drained(ws_transport& t, std::size_t i) override {
    ++drained_;
    // A Finalize is answered even where it finished nothing: an empty final, from_finalize.
    if (finalizing_[i] && !final_sent_[i]) send_empty_final(t, static_cast<int>(i % static_cast<std::size_t>(n_)));
    if (++drained_in_generation_[i / static_cast<std::size_t>(n_)] == n_) ++generations_drained_;
    if (closing_ && drained_ == t.channel_count()) finish(t);
  }

  std::optional<std::string> error_message(std::string_view code, std::string_view reason) const override {
    return to_wire(json{{"type", "Error"}, {"description", reason}, {"message", code}});
  }

  void on_session_limit(ws_transport& t) override { close_stream(t); }

 private:
  void open_generation(ws_transport& t) {
    std::vector<actors::channel_request> reqs;
    std::vector<int> call_channels;
    for (int c = 0; c < n_; ++c) {
      actors::channel_request r;
      r.label = n_ == 1 ? "mono" : "channel " + std::to_string(c);
      r.codec = o_.encoding == "linear16" ? "pcm_s16le" : o_.encoding;
      r.sample_rate = o_.sample_rate;
      r.hotwords = o_.hotwords;
      r.partials = o_.interim_results || o_.vad_events;
      // Deepgram gives one reading unless asked: the engine default does not apply here.
      r.alternatives = o_.alternatives > 1 ? o_.alternatives : 0;
      reqs.push_back(std::move(r));
      call_channels.push_back(c);
      offset_ms_.push_back(samples_[static_cast<std::size_t>(c)] * 1000 / o_.sample_rate);
      finalizing_.push_back(false);
      final_sent_.push_back(false);
      last_utterance_.push_back(-1);
    }
    drained_in_generation_.push_back(0);
    base_ = t.channel_count();
    active_ = true;
    t.open_channels(std::move(reqs), std::move(call_channels));
  }

  void push(ws_transport& t, int c, std::vector<uint8_t> bytes) {
    if (bytes.empty()) return;
    samples_[static_cast<std::size_t>(c)] += static_cast<int64_t>(bytes.size() / width_);
    t.push_audio(base_ + static_cast<std::size_t>(c), std::move(bytes));
  }

  // Ends the open channels (their finals follow); the next audio opens new ones.
  void end_generation(ws_transport& t, bool from_finalize) {
    if (!active_) return;
    for (int c = 0; c < n_; ++c) {
      finalizing_[base_ + static_cast<std::size_t>(c)] = from_finalize;
      t.end_channel(base_ + static_cast<std::size_t>(c));
    }
    active_ = false;
  }

  void finalize(ws_transport& t) {
    if (!active_) {
      // Nothing since the last Finalize: nothing to finish, answered at once.
      for (int c = 0; c < n_; ++c) send_empty_final(t, c);
      return;
    }
    const std::size_t ended = drained_in_generation_.size() - 1;  // generations before the open one
    if (ended - generations_drained_ >= max_finishing_generations)
      return t.fail("protocol",
                    "Finalize while " + std::to_string(max_finishing_generations) +
                        " earlier ones are still being finished: send audio between Finalize messages",
                    ws_close::policy);
    end_generation(t, true);
  }

  // An empty final of call channel c at the stream's present time, from a Finalize.
  void send_empty_final(ws_transport& t, int c) {
    actors::transcript_event ev;
    ev.is_final = true;
    const int64_t now_ms = samples_[static_cast<std::size_t>(c)] * 1000 / o_.sample_rate;
    t.send_text(to_wire(results(ev, c, now_ms, true)));
  }

  void close_stream(ws_transport& t) {
    if (closing_) return;
    closing_ = true;
    t.input_done();
    end_generation(t, false);
    if (drained_ == t.channel_count()) finish(t);
  }

  void finish(ws_transport& t) {
    std::string digest;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (sha_ && EVP_DigestFinal_ex(sha_.get(), md, &len) == 1) digest = to_hex(md, len);
    t.send_text(to_wire(json{{"type", "Metadata"},
                             {"transaction_key", "deprecated"},
                             {"request_id", request_id_},
                             {"sha256", digest},
                             {"created", created_},
                             {"duration", static_cast<double>(samples_[0]) / o_.sample_rate},
                             {"channels", n_},
                             {"models", json::array({deepgram_model_name})},
                             {"model_info", {{deepgram_model_name, deepgram_model_info()}}}}));
    t.close(ws_close::normal, "done");
  }

  json words(const std::vector<actors::word_event>& w, const std::vector<actors::word_event>* display,
             int64_t off) const {
    json out = json::array();
    const bool pair = display && display->size() == w.size();
    for (std::size_t k = 0; k < w.size(); ++k)
      out.push_back({{"word", w[k].word},
                     {"start", static_cast<double>(w[k].start_ms + off) / ms_per_s},
                     {"end", static_cast<double>(w[k].end_ms + off) / ms_per_s},
                     {"confidence", w[k].confidence},
                     {"punctuated_word", pair && pretty_ ? (*display)[k].word : w[k].word}});
    return out;
  }

  json results(const actors::transcript_event& ev, int c, int64_t off, bool from_finalize) const {
    const bool ranked = ev.is_final && !ev.alternatives.empty();
    json alts = json::array();
    alts.push_back({{"transcript", pretty_ && !ev.display_text.empty() ? ev.display_text : ev.text},
                    {"confidence", ranked ? ev.alternatives.front().confidence : switches::mean_confidence(ev)},
                    {"words", words(ev.words, &ev.display_words, off)}});
    for (std::size_t k = 1; ranked && k < ev.alternatives.size(); ++k) {
      const auto& a = ev.alternatives[k];
      alts.push_back({{"transcript", pretty_ && !a.display_text.empty() ? a.display_text : a.text},
                      {"confidence", a.confidence},
                      {"words", words(a.words, nullptr, off)}});
    }
    return json{{"type", "Results"},
                {"channel_index", {c, n_}},
                {"duration", static_cast<double>(ev.end_ms - ev.start_ms) / ms_per_s},
                {"start", static_cast<double>(ev.start_ms + off) / ms_per_s},
                {"is_final", ev.is_final},
                {"speech_final", ev.is_final},
                {"from_finalize", ev.is_final && from_finalize},
                {"channel", {{"alternatives", alts}}},
                {"metadata",
                 {{"request_id", request_id_}, {"model_info", deepgram_model_info()}, {"model_uuid", deepgram_model_name}}}};
  }

  deepgram_options o_;
  int n_;                       // call channels
  std::size_t width_;           // bytes per sample
  switches::deinterleaver split_;
  bool pretty_;                 // display-form transcripts
  std::unique_ptr<EVP_MD_CTX, md_ctx_free> sha_;  // of the audio bytes; null if OpenSSL failed
  std::string created_, request_id_;
  std::vector<uint8_t> carry_;  // mono: the bytes of a split sample
  std::vector<int64_t> samples_;  // per call channel, pushed so far
  // Per engine channel (n_ per generation; a Finalize ends one generation):
  std::vector<int64_t> offset_ms_;       // the call channel's audio before it opened
  std::vector<bool> finalizing_;         // ended by a Finalize
  std::vector<bool> final_sent_;         // a final went out for it
  std::vector<int> drained_in_generation_;  // per generation: its channels drained so far
  std::size_t generations_drained_ = 0;
  std::vector<int64_t> last_utterance_;  // for SpeechStarted
  std::size_t base_ = 0;                 // the open generation's first engine channel
  std::size_t drained_ = 0;
  bool active_ = false, closing_ = false;
};

}  // namespace

std::unique_ptr<ws_protocol> make_deepgram_protocol(deepgram_options options) {
  return std::make_unique<deepgram_protocol>(std::move(options));
}

}  // namespace sluice::net
