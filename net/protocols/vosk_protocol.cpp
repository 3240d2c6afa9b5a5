#include "net/protocols/vosk_protocol.hpp"

#include <algorithm>
#include <deque>

#include "dsp/pcm.hpp"
#include "moe/decoder/decoder_options.hpp"
#include "net/json_fields.hpp"
#include "net/ws_messages.hpp"

namespace sluice::net {

namespace {

constexpr double ms_per_s = 1000.0;
// Vosk's server takes any count (its own test_alternatives.py asks for 20); sluice refuses a
// count beyond this as a mistake and serves at most decoder_options::max_alternatives.
constexpr int64_t max_alternatives_limit = 100;

result<vosk_config> parse_config(const json& c) {
  if (!c.is_object()) return fail(errc::invalid_argument, "\"config\" must be an object");
  vosk_config out;
  auto rate = get_number(c, "sample_rate", out.sample_rate, dsp::min_sample_rate, dsp::max_sample_rate);
  if (!rate) return tl::unexpected(rate.error());
  // Vosk clients send the rate as an integer or as a float such as 16000.0.
  if (*rate != static_cast<double>(static_cast<int>(*rate)))
    return fail(errc::invalid_argument, "\"sample_rate\" must be a whole number of Hz");
  out.sample_rate = static_cast<int>(*rate);
  if (const auto it = c.find("phrase_list"); it != c.end()) {
    if (!it->is_array() || it->size() > max_hotwords)
      return fail(errc::invalid_argument, "\"phrase_list\" must be an array of at most " + std::to_string(max_hotwords) +
                                              " strings");
    for (const auto& p : *it) {
      if (!p.is_string() || p.get_ref<const std::string&>().size() > max_hotword_bytes)
        return fail(errc::invalid_argument, "\"phrase_list\" entries must be strings of at most " +
                                                std::to_string(max_hotword_bytes) + " bytes");
      if (!p.get_ref<const std::string&>().empty()) out.phrases.push_back(p.get<std::string>());
    }
  }
  if (const auto it = c.find("words"); it != c.end()) {
    // Vosk's server hands the value to SetWords, which takes true/false or 1/0.
    if (it->is_boolean()) out.words = it->get<bool>();
    else if (it->is_number_integer() && (*it == 0 || *it == 1)) out.words = *it == 1;
    else return fail(errc::invalid_argument, "\"words\" must be true or false");
  }
  auto alts = get_int(c, "max_alternatives", 0, 0, max_alternatives_limit);
  if (!alts) return tl::unexpected(alts.error());
  out.max_alternatives = static_cast<int>(*alts);
  return out;
}

// Which finals a reply may take: tagged with their engine channel.
struct tagged_final {
  std::size_t channel;
  actors::transcript_event ev;
};

class vosk_protocol final : public ws_protocol {
 public:
  std::string_view name() const override { return "vosk"; }

  // Asterisk's res_speech_vosk offers "ws".
  std::string accept_subprotocol(std::string_view offered) const override {
    return offers_subprotocol(offered, "ws") ? "ws" : "";
  }

  void on_text(ws_transport& t, std::string_view text) override {
    auto m = parse_vosk_message(text);
    if (!m) {
      const bool not_json = m.error().code == errc::corrupt;
      return t.fail(not_json ? "bad_json" : "protocol", m.error().message, ws_close::policy);
    }
    if (m->config) {
      if (t.channel_count() > 0) return t.fail("protocol", "\"config\" must come before any audio", ws_close::policy);
      cfg_ = std::move(*m->config);
      return;
    }
    flush(t, m->eof);
  }

  // server.max_session_s: the input ends as with {"eof" : 1} (its final, then close 1000).
  void on_session_limit(ws_transport& t) override { flush(t, true); }

  void on_binary(ws_transport& t, std::vector<uint8_t> bytes) override {
    if (t.channel_count() == 0) open(t);
    t.push_audio(current_, std::move(bytes));
    grow(current_);
    owed_.push_back({owed::frame, current_, ++channels_[current_].pushed});
    pump(t);
  }

  void on_open(ws_transport&, std::size_t, const actors::open_reply&) override {}

  void on_event(ws_transport& t, std::size_t i, const actors::transcript_event& ev) override {
    if (!ev.error.empty()) return;  // lock-step: no unasked message; the utterance has no final
    if (ev.is_final) {
      finals_.push_back({i, ev});
      if (partial_utterance_ == ev.utterance && partial_channel_ == i) partial_.clear();
    } else {
      partial_ = ev.text;
      partial_utterance_ = ev.utterance;
      partial_channel_ = i;
    }
    (void)t;
  }

  void on_drained(ws_transport& t, std::size_t i) override {
    grow(i);
    channels_[i].drained = true;
    if (partial_channel_ == i) partial_.clear();
    pump(t);
  }

  void on_progress(ws_transport& t, std::size_t i, uint64_t taken, bool caught_up) override {
    grow(i);
    channels_[i].taken = taken;
    channels_[i].caught_up = caught_up;
    pump(t);
  }

  std::optional<std::string> error_message(std::string_view code, std::string_view reason) const override {
    return to_wire(json{{"error", reason}, {"code", code}});
  }

 private:
  // reset (eof false) or eof: the finals of everything streamed so far in one reply.
  void flush(ws_transport& t, bool eof) {
    if (t.channel_count() == 0) {
      // Nothing was streamed: the final is empty, at once.
      t.send_text(to_wire(combined({})));
      if (eof) {
        t.input_done();
        t.close(ws_close::normal, "done");
      }
      return;
    }
    t.end_channel(current_);
    owed_.push_back({eof ? owed::eof : owed::flush, current_});
    if (eof) {
      t.input_done();
    } else {
      // Audio after the reset goes to a fresh channel while this one finishes.
      current_ = t.channel_count();
      t.open_channels({request()}, {0});
    }
    pump(t);
  }

  struct owed {
    enum kind_t { frame, flush, eof } kind;
    std::size_t channel;
    uint64_t message = 0;  ///< a frame: its number among the audio messages of its channel, from 1
  };

  // What is known of an engine channel: audio messages pushed, the last progress report, drained.
  struct channel_state {
    uint64_t pushed = 0;
    uint64_t taken = 0;
    bool caught_up = false;
    bool drained = false;
  };
  void grow(std::size_t i) {
    if (channels_.size() <= i) channels_.resize(i + 1);
  }

  // Vosk's server answers a message once the recognizer has taken it in, with the partial that
  // includes it. So does this one: a frame's reply waits until its channel has handled the
  // message and made all it can of the audio so far (or has drained). A client sending faster
  // than real time, one message per reply as Vosk's do, gets the partials of the audio it sent
  // instead of empty ones, and its pace follows the engine's.
  bool answerable(const owed& o) const {
    if (o.channel >= channels_.size()) return false;
    const auto& c = channels_[o.channel];
    return c.drained || (c.taken >= o.message && c.caught_up);
  }

  actors::channel_request request() const {
    actors::channel_request req;
    req.codec = "pcm_s16le";
    req.sample_rate = cfg_.sample_rate;
    req.hotwords = cfg_.phrases;
    // The n best only when the client asks (Vosk's max_alternatives), whatever the engine's
    // default: a client that did not ask reads "text".
    req.alternatives = std::min(cfg_.max_alternatives, moe::decoder_options::max_alternatives);
    return req;
  }

  void open(ws_transport& t) {
    calls::call_start call;
    call.source = "vosk";
    call.channel_labels = {"mono"};
    call.metadata = {{"sample_rate", cfg_.sample_rate}, {"phrase_list", cfg_.phrases}};
    t.begin_call(std::move(call));
    t.open_channels({request()});
  }

  // Sends the owed replies that can be sent, in order: a frame's at once (a final that came
  // since the last reply, or the partial), a reset's or eof's once its channel has drained.
  void pump(ws_transport& t) {
    while (!owed_.empty()) {
      const auto o = owed_.front();
      if (o.kind == owed::frame) {
        if (!answerable(o)) return;
        if (!finals_.empty()) {
          t.send_text(to_wire(combined({finals_.front().ev})));
          finals_.pop_front();
        } else {
          t.send_text(to_wire(json{{"partial", partial_}}));
        }
        owed_.pop_front();
        continue;
      }
      if (o.channel >= channels_.size() || !channels_[o.channel].drained) return;
      std::vector<actors::transcript_event> done;
      while (!finals_.empty() && finals_.front().channel <= o.channel) {
        done.push_back(std::move(finals_.front().ev));
        finals_.pop_front();
      }
      t.send_text(to_wire(combined(done)));
      owed_.pop_front();
      if (o.kind == owed::eof) return t.close(ws_close::normal, "done");
    }
  }

  // A Vosk word: {"conf", "start", "end", "word"} (seconds).
  static json word_json(const actors::word_event& w) {
    return {{"conf", w.confidence},
            {"start", static_cast<double>(w.start_ms) / ms_per_s},
            {"end", static_cast<double>(w.end_ms) / ms_per_s},
            {"word", w.word}};
  }

  // One result from finals (several when they were waiting for a reset or eof).
  json combined(const std::vector<actors::transcript_event>& evs) const {
    if (cfg_.max_alternatives > 0) return combined_alternatives(evs);
    std::string text;
    json words = json::array();
    for (const auto& ev : evs) {
      if (!ev.text.empty()) text += (text.empty() ? "" : " ") + ev.text;
      for (const auto& w : ev.words) words.push_back(word_json(w));
    }
    json r = {{"text", text}};
    if (cfg_.words && !words.empty()) r["result"] = words;
    return r;
  }

  // {"alternatives": [{"confidence", "result" (with words), "text"}]}, best first, at most
  // max_alternatives of them. One final: its n best readings, each with its share of the
  // probability of the readings the decoder kept. Several finals (a reset or eof after more than
  // one utterance): reading k joins each utterance's k-th reading (its best where it has fewer),
  // its confidence the product of theirs, repeated texts left out. A final without readings (the
  // engine's own, or an empty one) counts as its text with confidence 1.
  json combined_alternatives(const std::vector<actors::transcript_event>& evs) const {
    std::vector<std::vector<actors::alternative_event>> per;
    std::size_t most = 1;
    for (const auto& ev : evs) {
      if (ev.text.empty() && ev.alternatives.empty()) continue;
      per.push_back(ev.alternatives.empty() ? std::vector<actors::alternative_event>{{ev.text, 1.0f, ev.words, {}}}
                                            : ev.alternatives);
      most = std::max(most, per.back().size());
    }
    json alts = json::array();
    std::vector<std::string> seen;
    for (std::size_t k = 0; k < most && alts.size() < static_cast<std::size_t>(cfg_.max_alternatives); ++k) {
      std::string text;
      json words = json::array();
      double confidence = 1;
      for (const auto& readings : per) {
        const auto& a = readings[k < readings.size() ? k : 0];
        if (!a.text.empty()) text += (text.empty() ? "" : " ") + a.text;
        for (const auto& w : a.words) words.push_back(word_json(w));
        confidence *= a.confidence;
      }
      if (std::find(seen.begin(), seen.end(), text) != seen.end()) continue;
      seen.push_back(text);
      json alt = {{"confidence", confidence}, {"text", text}};
      if (cfg_.words) alt["result"] = std::move(words);
      alts.push_back(std::move(alt));
    }
    return json{{"alternatives", std::move(alts)}};
  }

  vosk_config cfg_;
  std::size_t current_ = 0;  ///< the engine channel audio goes to
  std::deque<owed> owed_;    ///< replies not sent yet, in the order they are owed
  std::deque<tagged_final> finals_;  ///< finals not sent yet
  std::vector<channel_state> channels_;  ///< by engine channel
  std::string partial_;
  int64_t partial_utterance_ = -1;
  std::size_t partial_channel_ = 0;
};

}  // namespace

result<vosk_message> parse_vosk_message(std::string_view text) {
  auto j = parse_object(text);
  if (!j) return fail(j.error().code == errc::internal ? errc::internal : errc::corrupt, j.error().message);
  vosk_message m;
  if (const auto it = j->find("config"); it != j->end()) {
    auto c = parse_config(*it);
    if (!c) return tl::unexpected(c.error());
    m.config = std::move(*c);
    return m;
  }
  // {"eof" : 1} and {"reset" : 1}, as Vosk's clients send them (true is taken too).
  auto flag = [&](const char* key) -> result<bool> {
    const auto it = j->find(key);
    if (it == j->end()) return false;
    if ((it->is_number_integer() && *it == 1) || (it->is_boolean() && it->get<bool>())) return true;
    return fail(errc::invalid_argument, std::string("\"") + key + "\" must be 1");
  };
  auto eof = flag("eof");
  if (!eof) return tl::unexpected(eof.error());
  auto reset = flag("reset");
  if (!reset) return tl::unexpected(reset.error());
  m.eof = *eof;
  m.reset = *reset;
  if (m.eof == m.reset)
    return fail(errc::invalid_argument,
                "expected {\"config\": {...}} before the audio, binary PCM, {\"eof\" : 1} or {\"reset\" : 1}");
  return m;
}

std::unique_ptr<ws_protocol> make_vosk_protocol() { return std::make_unique<vosk_protocol>(); }

}  // namespace sluice::net
