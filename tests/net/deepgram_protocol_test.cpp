// Deepgram's live protocol on /v1/listen, by a client written from its published format (the
// message shapes of Deepgram's SDK types: LiveTranscriptionEvent, LiveMetadataEvent,
// UtteranceEndEvent, SpeechStartedEvent; the SDK itself was run against `sluice serve` by hand:
// see README). The reference for the text is /v1/stream given the same samples.
#include "tests/net/auth_test_util.hpp"
#include "tests/net/honest_stream.hpp"
#include "tests/net/switch_test_util.hpp"

#include "net/protocols/deepgram_query.hpp"
#include "net/protocols/deepgram_rest.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

std::vector<uint8_t> pcm16_bytes(const std::vector<int16_t>& pcm) {
  std::vector<uint8_t> out;
  for (int16_t v : pcm) {
    out.push_back(static_cast<uint8_t>(v & 0xFF));
    out.push_back(static_cast<uint8_t>((v >> 8) & 0xFF));
  }
  return out;
}

// `bytes` cut into messages of `n` bytes (an odd n splits samples across messages).
std::vector<std::vector<uint8_t>> chunks(const std::vector<uint8_t>& bytes, std::size_t n) {
  std::vector<std::vector<uint8_t>> out;
  for (std::size_t i = 0; i < bytes.size(); i += n)
    out.emplace_back(bytes.begin() + static_cast<std::ptrdiff_t>(i),
                     bytes.begin() + static_cast<std::ptrdiff_t>(std::min(bytes.size(), i + n)));
  return out;
}

std::vector<json> of_type(const std::vector<json>& messages, const std::string& type) {
  std::vector<json> out;
  for (const auto& m : messages)
    if (m.value("type", std::string()) == type) out.push_back(m);
  return out;
}

std::vector<json> finals(const std::vector<json>& messages) {
  std::vector<json> out;
  for (const auto& m : of_type(messages, "Results"))
    if (m.value("is_final", false)) out.push_back(m);
  return out;
}

std::string transcript(const json& results) { return results["channel"]["alternatives"][0]["transcript"]; }

// The finals' transcripts with words (an empty final is a noise burst, which /v1/stream does not send).
std::vector<std::string> final_transcripts(const std::vector<json>& messages, int channel = -1) {
  std::vector<std::string> out;
  for (const auto& f : finals(messages))
    if ((channel < 0 || f["channel_index"][0] == channel) && !transcript(f).empty()) out.push_back(transcript(f));
  return out;
}

// /v1/stream's finals for mono PCM16 at `rate`.
std::vector<std::string> stream_finals(uint16_t port, const std::vector<int16_t>& pcm, int rate) {
  auto ref = ws_session(port, "/v1/stream",
                        {R"({"type":"start","encoding":"pcm_s16le","channels":1,"sample_rate":)" + std::to_string(rate) + "}"},
                        pcm16_messages(pcm, 1600), {R"({"type":"end"})"});
  std::vector<std::string> want;
  for (auto& t : final_texts(ref.messages))
    if (!t.empty()) want.push_back(std::move(t));
  REQUIRE(want.size() >= 2);
  return want;
}

const std::string close_stream = R"({"type":"CloseStream"})";

}  // namespace

TEST_SUITE("deepgram protocol") {
  TEST_CASE("deepgram query: the options Deepgram's SDK sends are read, and what sluice cannot serve is refused by name") {
    auto o = net::parse_deepgram_query(
        "/v1/listen?model=nova-2&language=en-US&encoding=mulaw&sample_rate=8000&channels=2&multichannel=true&"
        "interim_results=true&punctuate=false&smart_format=true&vad_events=true&utterance_end_ms=1000&"
        "endpointing=300&keywords=northwind:5&keywords=refund&keyterm=credit%20card&keyterm=account+number&"
        "alternatives=3&diarize=false");
    REQUIRE(o.has_value());
    CHECK(o->encoding == "mulaw");
    CHECK(o->sample_rate == 8000);
    CHECK(o->channels == 2);
    CHECK(o->multichannel);
    CHECK(o->interim_results);
    CHECK_FALSE(o->punctuate);
    CHECK(o->smart_format);
    CHECK(o->vad_events);
    CHECK(o->utterance_end_ms == 1000);
    CHECK(o->alternatives == 3);
    CHECK(o->language == "en-US");
    // Boosts become hotword weights; a keyterm (and a keyword without one) gets /v1/stream's default 3;
    // %20 and + are spaces.
    CHECK(o->hotwords == std::vector<std::string>{"northwind 5.000000", "refund 3.000000", "credit card 3.000000",
                                                  "account number 3.000000"});

    const std::string ok = "/v1/listen?encoding=linear16&sample_rate=16000";
    auto d = net::parse_deepgram_query(ok);
    REQUIRE(d.has_value());
    CHECK(d->channels == 1);
    CHECK_FALSE(d->interim_results);
    CHECK(d->alternatives == 1);
    CHECK_FALSE(d->utterance_end_ms.has_value());

    for (const auto& [query, names] : std::vector<std::pair<std::string, std::string>>{
             {"/v1/listen?sample_rate=8000", "encoding"},
             {"/v1/listen?encoding=opus&sample_rate=48000", "encoding"},
             {"/v1/listen?encoding=linear16", "sample_rate"},
             {"/v1/listen?encoding=linear16&sample_rate=4000", "sample_rate"},
             {"/v1/listen?encoding=linear16&sample_rate=8000.5", "sample_rate"},
             {ok + "&channels=3", "channels"},
             {ok + "&channels=2", "multichannel"},
             {ok + "&interim_results=yes", "interim_results"},
             {ok + "&language=de", "language"},
             {ok + "&keywords=refund:-4", "boost"},
             {ok + "&keywords=refund:abc", "boost"},
             {ok + "&keywords=", "keywords"},
             {ok + "&alternatives=21", "alternatives"},
             {ok + "&utterance_end_ms=10", "utterance_end_ms"},
             {ok + "&keyterm=%zz", "'%'"},
             {ok + "&keyterm=%ff%fe", "UTF-8"}}) {
      CAPTURE(query);
      auto r = net::parse_deepgram_query(query);
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().message.find(names) != std::string::npos);
    }
    std::string many = ok;
    for (int i = 0; i <= 256; ++i) many += "&keyterm=w" + std::to_string(i);
    CHECK_FALSE(net::parse_deepgram_query(many).has_value());
  }

  TEST_CASE("deepgram: a mono linear16 stream split mid-sample gets /v1/stream's finals, then Metadata with the "
            "audio's duration and SHA-256, then close 1000") {
    served s;
    const auto pcm = call_pcm16(0, 16000);
    const auto want = stream_finals(s.port, pcm, 16000);
    const auto bytes = pcm16_bytes(pcm);
    auto r = ws_session(s.port, "/v1/listen?encoding=linear16&sample_rate=16000&model=nova-2", {},
                        chunks(bytes, 3333), {close_stream});
    CHECK(r.close_code == 1000);
    CHECK(final_transcripts(r.messages) == want);
    // No interim_results: finals only.
    CHECK(of_type(r.messages, "Results").size() == finals(r.messages).size());
    double last_end = 0;
    for (const auto& f : finals(r.messages)) {
      CHECK(f["channel_index"] == json::array({0, 1}));
      CHECK(f["channel"]["alternatives"].size() == 1);  // one reading unless asked
      CHECK(f["speech_final"] == true);
      CHECK(f["from_finalize"] == false);
      const double start = f["start"], duration = f["duration"];
      CHECK(start >= last_end - 1e-9);
      CHECK(duration > 0);
      last_end = start + duration;
      for (const auto& w : f["channel"]["alternatives"][0]["words"]) {
        CHECK(w["start"].get<double>() >= start - 1e-9);
        CHECK(w["end"].get<double>() <= last_end + 1e-9);
      }
    }
    CHECK(last_end <= static_cast<double>(pcm.size()) / 16000 + 1e-9);
    REQUIRE_FALSE(r.messages.empty());
    const auto& meta = r.messages.back();
    CHECK(meta["type"] == "Metadata");
    CHECK(meta["duration"].get<double>() == doctest::Approx(static_cast<double>(pcm.size()) / 16000));
    CHECK(meta["channels"] == 1);
    CHECK(meta["sha256"] == net::sha256_hex(std::string(bytes.begin(), bytes.end())));  // one-shot, FIPS-checked below
    const auto call = wait_ended_call(*s.server, "deepgram");
    CHECK(meta["request_id"] == call.id);
    CHECK(finals(r.messages).front()["metadata"]["request_id"] == call.id);
  }

  TEST_CASE("deepgram: stereo with multichannel=true gets each channel's own finals, with interim results, "
            "SpeechStarted and UtteranceEnd when asked") {
    served s;
    const auto left = call_pcm16(0, 8000), right = call_pcm16(1, 8000);
    REQUIRE(left.size() == right.size());
    const auto want0 = stream_finals(s.port, left, 8000), want1 = stream_finals(s.port, right, 8000);
    std::vector<int16_t> both;
    for (std::size_t i = 0; i < left.size(); ++i) {
      both.push_back(left[i]);
      both.push_back(right[i]);
    }
    auto r = ws_session(s.port,
                        "/v1/listen?encoding=linear16&sample_rate=8000&channels=2&multichannel=true&"
                        "interim_results=true&vad_events=true&utterance_end_ms=1000",
                        {}, chunks(pcm16_bytes(both), 1001), {close_stream});
    CHECK(r.close_code == 1000);
    CHECK(final_transcripts(r.messages, 0) == want0);
    CHECK(final_transcripts(r.messages, 1) == want1);
    CHECK(of_type(r.messages, "Results").size() > finals(r.messages).size());  // interim results
    // Per channel: a SpeechStarted before each utterance's first result, an UtteranceEnd right
    // after each final with words, naming its last word's end.
    for (int c = 0; c < 2; ++c) {
      CAPTURE(c);
      int open = 0;
      std::size_t utterances = 0;
      for (std::size_t i = 0; i < r.messages.size(); ++i) {
        const auto& m = r.messages[i];
        const std::string type = m.value("type", std::string());
        if (type == "SpeechStarted" && m["channel"][0] == c) {
          CHECK(open == 0);
          open = 1;
          ++utterances;
        } else if (type == "Results" && m["channel_index"][0] == c) {
          CHECK(open == 1);
          CHECK(m["channel_index"][1] == 2);
          if (m["is_final"] == true) {
            open = 0;
            const auto& words = m["channel"]["alternatives"][0]["words"];
            if (!words.empty()) {
              REQUIRE(i + 1 < r.messages.size());
              const auto& end = r.messages[i + 1];
              CHECK(end["type"] == "UtteranceEnd");
              CHECK(end["channel"] == json::array({c, 2}));
              CHECK(end["last_word_end"].get<double>() == doctest::Approx(words.back()["end"].get<double>()));
            }
          }
        }
      }
      CHECK(utterances >= (c == 0 ? want0.size() : want1.size()));
    }
    CHECK(r.messages.back()["channels"] == 2);
  }

  TEST_CASE("deepgram: Finalize ends the utterances so far (from_finalize) and the stream goes on, its times "
            "continuing") {
    served s;
    const auto pcm = call_pcm16(0, 8000);
    const auto bytes = pcm16_bytes(pcm);
    // Cut 3 s in, inside channel 0's first sentence (0.5 s to 6.4 s): only the Finalize can end
    // that utterance there, so its final is the Finalize's.
    const std::size_t cut = 2 * 8000 * 3;
    REQUIRE(cut < bytes.size());
    const std::vector<uint8_t> first(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
    const std::vector<uint8_t> rest(bytes.begin() + static_cast<std::ptrdiff_t>(cut), bytes.end());
    stepped_stream dg(s.port);
    REQUIRE(dg.open("/v1/listen?encoding=linear16&sample_rate=8000&punctuate=true", {}) == 101);
    for (const auto& m : chunks(first, 1600)) dg.send_binary(m);
    dg.send_text(R"({"type":"KeepAlive"})");
    dg.send_text(R"({"type":"Finalize"})");
    // The finals of the first part arrive, marked, before anything of the rest is sent.
    std::vector<json> before;
    for (;;) {
      auto m = dg.read_next();
      REQUIRE(m.has_value());
      before.push_back(*m);
      if (m->value("type", std::string()) == "Results" && m->value("from_finalize", false)) break;
    }
    for (const auto& f : finals(before)) {
      CHECK(f["from_finalize"] == true);
      CHECK(f["start"].get<double>() + f["duration"].get<double>() <= 3.0 + 1e-9);
    }
    for (const auto& m : chunks(rest, 1600)) dg.send_binary(m);
    dg.send_text(close_stream);
    CHECK(dg.read_to_close() == 1000);
    const auto& all = dg.messages();
    const auto later = finals(std::vector<json>(all.begin() + static_cast<std::ptrdiff_t>(before.size()), all.end()));
    REQUIRE_FALSE(later.empty());
    for (const auto& f : later) {
      CHECK(f["from_finalize"] == false);
      CHECK(f["start"].get<double>() >= 3.0 - 1e-9);  // on the stream's clock, not the new channel's
    }
    // Punctuated: the display form (a capital first letter), each word's punctuated_word beside it.
    const auto& w = later.front()["channel"]["alternatives"][0]["words"];
    REQUIRE_FALSE(w.empty());
    CHECK(std::isupper(static_cast<unsigned char>(transcript(later.front())[0])));
    CHECK(w[0].contains("punctuated_word"));
    CHECK(all.back()["type"] == "Metadata");
    CHECK(all.back()["duration"].get<double>() == doctest::Approx(static_cast<double>(pcm.size()) / 8000));
  }

  TEST_CASE("deepgram: alternatives=3 lists one to three readings per final, their confidences falling") {
    served s;
    const auto pcm = call_pcm16(0, 8000);
    auto r = ws_session(s.port, "/v1/listen?encoding=linear16&sample_rate=8000&alternatives=3", {},
                        chunks(pcm16_bytes(pcm), 1600), {close_stream});
    CHECK(r.close_code == 1000);
    REQUIRE(finals(r.messages).size() >= 2);
    bool several = false;
    for (const auto& f : finals(r.messages)) {
      const auto& alts = f["channel"]["alternatives"];
      CHECK(alts.size() >= 1);
      CHECK(alts.size() <= 3);
      several = several || alts.size() > 1;
      double last = 1.0 + 1e-6;
      for (const auto& a : alts) {
        CHECK(a["confidence"].get<double>() <= last);
        CHECK(a["confidence"].get<double>() > 0);
        last = a["confidence"];
      }
    }
    CHECK(several);  // the beam keeps other readings of a whole sentence
  }

  TEST_CASE("deepgram: a bad query is a 400 before the upgrade, an unknown or malformed message an Error "
            "then close 1008, and an honest stream beside them is untouched") {
    served s;
    const auto want = reference_finals(s.port);
    honest_stream honest(s.port);
    stepped_stream refused(s.port);
    CHECK(refused.open("/v1/listen?encoding=flac&sample_rate=16000", {}) == 400);
    CHECK(refused.refusal.body().find("encoding") != std::string::npos);

    for (const auto& text : {std::string(R"({"type":"Configure","processors":{}})"), std::string("not json"),
                             std::string(R"({"type":7})")}) {
      CAPTURE(text);
      auto r = ws_session(s.port, "/v1/listen?encoding=mulaw&sample_rate=8000", {},
                          {std::vector<uint8_t>(160, 0xff)}, {text});
      CHECK(r.close_code == 1008);
      REQUIRE_FALSE(r.messages.empty());
      CHECK(r.messages.back()["type"] == "Error");
      CHECK_FALSE(r.messages.back().value("description", std::string()).empty());
    }
    CHECK(honest.finish() == want);
  }

  TEST_CASE("deepgram: a Finalize with nothing to finish gets an empty from_finalize final at once, and an empty "
            "message ends the stream like CloseStream") {
    served s;
    stepped_stream dg(s.port);
    REQUIRE(dg.open("/v1/listen?encoding=linear16&sample_rate=8000", {}) == 101);
    dg.send_binary({0x01});  // half a sample: opens nothing
    dg.send_text(R"({"type":"Finalize"})");
    auto m = dg.read_next();
    REQUIRE(m.has_value());
    CHECK((*m)["type"] == "Results");
    CHECK((*m)["is_final"] == true);
    CHECK((*m)["from_finalize"] == true);
    CHECK(transcript(*m).empty());
    CHECK((*m)["start"] == 0.0);
    // The stream goes on: the byte held back and the call's first sentence, then the empty end.
    const auto pcm = call_pcm16(0, 8000);
    std::vector<uint8_t> rest = pcm16_bytes(std::vector<int16_t>(pcm.begin(), pcm.begin() + 8000 * 7));
    rest.erase(rest.begin());  // the first sample's other byte
    for (const auto& c : chunks(rest, 1600)) dg.send_binary(c);
    dg.send_binary({});
    CHECK(dg.read_to_close() == 1000);
    CHECK_FALSE(final_transcripts(dg.messages()).empty());
    CHECK(dg.messages().back()["type"] == "Metadata");
    CHECK(dg.messages().back()["duration"].get<double>() == doctest::Approx(7.0));
  }

  TEST_CASE("deepgram auth: Authorization Token and the browser's token subprotocol carry an API key") {
    keyring ring;
    const std::string key = ring.add("acme", "stream");
    config::sluice_config cfg;
    cfg.auth.keys_file = ring.path;
    served s(cfg);
    const std::string target = "/v1/listen?encoding=mulaw&sample_rate=8000";

    CHECK(stepped_stream(s.port).open(target, {}) == 401);
    CHECK(stepped_stream(s.port).open(target, {{"Authorization", "Token not-a-key"}}) == 401);
    CHECK(stepped_stream(s.port).open(target, {{"Sec-WebSocket-Protocol", "token, not-a-key"}}) == 401);
    CHECK(stepped_stream(s.port).open(target, {{"Authorization", "Basic " + key}}) == 401);

    stepped_stream by_header(s.port);
    REQUIRE(by_header.open(target, {{"Authorization", "Token " + key}}) == 101);
    by_header.send_binary(std::vector<uint8_t>(800, 0xff));
    by_header.send_text(close_stream);
    CHECK(by_header.read_to_close() == 1000);
    CHECK(wait_ended_call(*s.server, "deepgram").start.tenant == "acme");

    stepped_stream by_subprotocol(s.port);
    REQUIRE(by_subprotocol.open(target, {{"Sec-WebSocket-Protocol", "token, " + key}}) == 101);
    // Only "token" is granted: the key is never echoed.
    CHECK(by_subprotocol.refusal[http::field::sec_websocket_protocol] == "token");
    by_subprotocol.send_text(close_stream);
    CHECK(by_subprotocol.read_to_close() == 1000);
    REQUIRE_FALSE(by_subprotocol.messages().empty());
    CHECK(by_subprotocol.messages().back()["type"] == "Metadata");
    CHECK(by_subprotocol.messages().back()["duration"] == 0.0);

    // The pre-recorded API takes the Token scheme too, and needs the stream scope.
    const std::string reader = ring.add("acme", "read");
    served again(cfg);  // the keys file is read at start
    const auto pcm = pcm16_bytes(call_pcm16(0, 8000));
    const std::string body(pcm.begin(), pcm.begin() + 8000 * 2 * 3);
    const std::string raw = "/v1/listen?encoding=linear16&sample_rate=8000";
    CHECK(request_with(again.port, http::verb::post, raw, {{"Authorization", "Token " + key}}, body).status == 200);
    CHECK(request_with(again.port, http::verb::post, raw, {{"Authorization", "Token " + reader}}, body).status ==
          403);
    CHECK(stepped_stream(again.port).open(target, {{"Authorization", "Token " + reader}}) == 403);
    // The subprotocol pair carries a key on Deepgram's path only.
    CHECK(stepped_stream(again.port).open("/v1/stream", {{"Sec-WebSocket-Protocol", "token, " + key}}) == 401);
  }
}

TEST_SUITE("deepgram pre-recorded") {
  TEST_CASE("deepgram pre-recorded query: a file needs no encoding, raw audio needs its rate, two channels may merge") {
    auto f = net::parse_deepgram_query("/v1/listen?model=nova-2&smart_format=true&utterances=true", false);
    REQUIRE(f.has_value());
    CHECK(f->encoding.empty());
    CHECK(f->utterances);
    CHECK_FALSE(net::parse_deepgram_query("/v1/listen?model=nova-2", true).has_value());  // live needs it
    auto raw = net::parse_deepgram_query("/v1/listen?encoding=mulaw&sample_rate=8000&channels=2", false);
    REQUIRE(raw.has_value());
    CHECK(raw->channels == 2);
    CHECK_FALSE(raw->multichannel);
    auto no_rate = net::parse_deepgram_query("/v1/listen?encoding=mulaw", false);
    REQUIRE_FALSE(no_rate.has_value());
    CHECK(no_rate.error().message.find("sample_rate") != std::string::npos);
    auto rate_only = net::parse_deepgram_query("/v1/listen?sample_rate=8000", false);
    REQUIRE_FALSE(rate_only.has_value());
    CHECK(rate_only.error().message.find("encoding") != std::string::npos);
  }

  TEST_CASE("deepgram pre-recorded response: channels, merged words, utterances and display words from a transcript "
            "document worked out by hand") {
    // Two channels: the agent speaks at 0.5-1.5 s and 4-5 s, the customer cuts in at 0.8-0.95 s.
    const auto doc = json::parse(R"({
      "duration_s": 6.0, "sample_rate": 8000, "errors": ["channel 1: utterance 7 lost"],
      "channels": [
        {"channel": 0, "label": "agent", "segments": [
          {"start_ms": 500, "end_ms": 1500, "text": "hello there", "display_text": "Hello there.",
           "words": [{"word": "hello", "start_ms": 500, "end_ms": 900, "confidence": 0.5},
                     {"word": "there", "start_ms": 1000, "end_ms": 1500, "confidence": 1.0}],
           "display_words": [{"word": "Hello", "start_ms": 500, "end_ms": 900, "confidence": 0.5},
                             {"word": "there.", "start_ms": 1000, "end_ms": 1500, "confidence": 1.0}]},
          {"start_ms": 4000, "end_ms": 5000, "text": "ten dollars", "display_text": "$10",
           "words": [{"word": "ten", "start_ms": 4000, "end_ms": 4400, "confidence": 0.25},
                     {"word": "dollars", "start_ms": 4500, "end_ms": 5000, "confidence": 0.75}],
           "display_words": [{"word": "$10", "start_ms": 4000, "end_ms": 5000, "confidence": 0.5}]}]},
        {"channel": 1, "label": "customer", "segments": [
          {"start_ms": 800, "end_ms": 950, "text": "hi", "display_text": "Hi!",
           "words": [{"word": "hi", "start_ms": 800, "end_ms": 950, "confidence": 0.5}],
           "display_words": [{"word": "Hi!", "start_ms": 800, "end_ms": 950, "confidence": 0.5}]}]}]})");
    net::deepgram_options o;
    o.multichannel = true;
    o.smart_format = true;
    o.utterances = true;
    const net::deepgram_request_info info{"call-7", "abc", "2026-12-07T10:00:00.000Z"};
    auto r = net::deepgram_prerecorded(doc, o, info);

    CHECK(r["metadata"]["request_id"] == "call-7");
    CHECK(r["metadata"]["sha256"] == "abc");
    CHECK(r["metadata"]["duration"] == 6.0);
    CHECK(r["metadata"]["channels"] == 2);
    CHECK(r["metadata"]["warnings"][0]["message"] == "channel 1: utterance 7 lost");
    const auto& ch = r["results"]["channels"];
    REQUIRE(ch.size() == 2);
    const auto& agent = ch[0]["alternatives"][0];
    CHECK(agent["transcript"] == "Hello there. $10");
    CHECK(agent["confidence"].get<double>() == doctest::Approx((0.5 + 1.0 + 0.25 + 0.75) / 4));
    REQUIRE(agent["words"].size() == 4);
    CHECK(agent["words"][1] == json{{"word", "there"}, {"start", 1.0}, {"end", 1.5}, {"confidence", 1.0},
                                    {"punctuated_word", "there."}});
    // "$10" writes two spoken words as one token: no pairing, each word stays as spoken.
    CHECK(agent["words"][2]["punctuated_word"] == "ten");
    CHECK(ch[1]["alternatives"][0]["transcript"] == "Hi!");
    const auto& utt = r["results"]["utterances"];
    REQUIRE(utt.size() == 3);
    CHECK(utt[0]["channel"] == 0);
    CHECK(utt[1]["channel"] == 1);  // 0.8 s: after the agent's first segment began
    CHECK(utt[1]["transcript"] == "Hi!");
    CHECK(utt[1]["start"] == 0.8);
    CHECK(utt[1]["end"] == 0.95);
    CHECK(utt[1]["id"] == "call-7-1");
    CHECK(utt[2]["transcript"] == "$10");

    // Without multichannel: one channel, every word in time order (the customer's "hi" inside the
    // agent's first segment), the transcript those words.
    o.multichannel = false;
    o.smart_format = false;
    o.utterances = false;
    auto merged = net::deepgram_prerecorded(doc, o, info);
    REQUIRE(merged["results"]["channels"].size() == 1);
    const auto& m = merged["results"]["channels"][0]["alternatives"][0];
    CHECK(m["transcript"] == "hello hi there ten dollars");
    REQUIRE(m["words"].size() == 5);
    CHECK(m["words"][1]["word"] == "hi");
    CHECK(m["words"][1]["punctuated_word"] == "hi");  // no smart_format: the spoken word
    CHECK_FALSE(merged["results"].contains("utterances"));
    CHECK(merged["metadata"]["channels"] == 1);
    // With smart_format the merged transcript is the written tokens in time order ("$10" for two words).
    o.smart_format = true;
    o.utterances = true;
    const auto pretty = net::deepgram_prerecorded(doc, o, info);
    CHECK(pretty["results"]["channels"][0]["alternatives"][0]["transcript"] == "Hello Hi! there. $10");
    REQUIRE(pretty["results"]["utterances"].size() == 3);
    for (const auto& u : pretty["results"]["utterances"]) CHECK(u["channel"] == 0);  // the one channel there is
    CHECK(net::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // FIPS 180-2
  }

  TEST_CASE("deepgram pre-recorded: POST /v1/listen answers /v1/transcribe's transcript in Deepgram's shape, "
            "the call id as request_id") {
    served s;
    const std::string wav = call_wav_bytes();
    REQUIRE(wav.size() > 1000);
    const auto ours = http_request(s.port, http::verb::post, "/v1/transcribe", wav);
    REQUIRE(ours.status == 200);
    const auto doc = json::parse(ours.body);
    const headers audio{{"Content-Type", "deepgram/audio+video"}};
    auto dg = request_with(s.port, http::verb::post, "/v1/listen?model=nova-2&multichannel=true", audio, wav);
    REQUIRE(dg.status == 200);
    const auto r = json::parse(dg.body);
    REQUIRE(r["results"]["channels"].size() == 2);
    for (std::size_t c = 0; c < 2; ++c) {
      std::string want;
      std::size_t words = 0;
      for (const auto& seg : doc["channels"][c]["segments"]) {
        want += (want.empty() ? "" : " ") + seg["text"].get<std::string>();
        words += seg["words"].size();
      }
      CHECK(r["results"]["channels"][c]["alternatives"][0]["transcript"] == want);
      CHECK(r["results"]["channels"][c]["alternatives"][0]["words"].size() == words);
    }
    CHECK(r["metadata"]["sha256"] == net::sha256_hex(wav));
    CHECK(r["metadata"]["duration"].get<double>() == doctest::Approx(doc["duration_s"].get<double>()));
    const auto calls = s.server->calls().list();
    bool found = false;
    for (const auto& c : calls) found = found || (c.id == r["metadata"]["request_id"] && c.start.source == "upload");
    CHECK(found);

    // The same audio as a raw body (its data chunk, 8 kHz mu-law, 2 channels) reads the same.
    const auto data = wav.find("data");
    REQUIRE(data != std::string::npos);
    const std::string raw = wav.substr(data + 8);
    auto dr = request_with(s.port, http::verb::post,
                           "/v1/listen?encoding=mulaw&sample_rate=8000&channels=2&multichannel=true", audio, raw);
    REQUIRE(dr.status == 200);
    CHECK(json::parse(dr.body)["results"]["channels"] == r["results"]["channels"]);

    auto bad = request_with(s.port, http::verb::post, "/v1/listen?encoding=flac&sample_rate=8000", audio, wav);
    CHECK(bad.status == 400);
    CHECK(json::parse(bad.body)["err_msg"].get<std::string>().find("encoding") != std::string::npos);
    auto alts = request_with(s.port, http::verb::post, "/v1/listen?alternatives=2", audio, wav);
    CHECK(alts.status == 400);
    CHECK(json::parse(alts.body)["err_msg"].get<std::string>().find("alternatives") != std::string::npos);
    // keywords reach the channels as hotwords: one the model cannot spell is refused by name.
    auto kw = request_with(s.port, http::verb::post, "/v1/listen?keywords=%E2%82%AC", audio, wav);
    CHECK(kw.status == 400);
    CHECK(json::parse(kw.body)["err_msg"].get<std::string>().find("\u20ac") != std::string::npos);  // names it
    auto url = request_with(s.port, http::verb::post, "/v1/listen", {{"Content-Type", "application/json"}},
                            R"({"url":"https://example.com/call.wav"})");
    CHECK(url.status == 400);
    CHECK(json::parse(url.body)["err_msg"].get<std::string>().find("URL") != std::string::npos);
    auto garbage = request_with(s.port, http::verb::post, "/v1/listen", audio, std::string(4000, 'x'));
    CHECK(garbage.status >= 400);
    CHECK(garbage.status < 500);
    CHECK(json::parse(garbage.body, nullptr, false).contains("err_msg"));
  }
}
