// FreeSWITCH mod_audio_fork and jambonz `listen` end to end, driven by emulators of the switch
// written from the published formats (drachtio-freeswitch-modules mod_audio_fork README,
// docs.jambonz.org listen): a stereo call of real speech, both channels transcribed, the
// transcriptions sent back on the socket, the call in the registry with its labels and
// metadata; and each hostile input refused clearly while an honest stream goes on untouched.
#include "tests/net/switch_test_util.hpp"

#include "tests/net/honest_stream.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {

constexpr std::size_t samples_per_20ms = 160;

// The bundled call as the switch sends stereo: caller and callee samples interleaved, 20 ms per frame.
std::vector<std::vector<uint8_t>> stereo_frames() {
  const auto a = call_samples(0), b = call_samples(1);
  std::vector<int16_t> both;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) both.insert(both.end(), {a[i], b[i]});
  return pcm16_frames(both, 2 * samples_per_20ms);
}

// The final texts of the transcription messages of `label`, in the order sent.
std::vector<std::string> sent_finals(const ws_result& r, const std::string& label) {
  std::vector<std::string> out;
  for (const auto& m : r.messages)
    if (m.is_object() && m.value("type", "") == "transcription" && m["data"]["label"] == label &&
        m["data"]["is_final"] == true)
      out.push_back(m["data"]["text"]);
  return out;
}

}  // namespace

TEST_SUITE("audio fork") {
  TEST_CASE("jambonz listen, stereo: both channels transcribed, transcriptions sent back, the call registered") {
    served s;
    const auto ref0 = reference_call_finals(*s.engine, "pcm_s16le", 0, samples_per_20ms);
    const auto ref1 = reference_call_finals(*s.engine, "pcm_s16le", 1, samples_per_20ms);
    std::vector<ws_message> script{ws_message::txt(
        R"({"callSid":"js-1","direction":"inbound","from":"+15551234","to":"+18005550000","sampleRate":8000,"mixType":"stereo","agentId":"a7"})")};
    const auto frames = stereo_frames();
    for (std::size_t i = 0; i < frames.size(); ++i) {
      script.push_back(ws_message::bin(frames[i]));
      if (i == frames.size() / 2) script.push_back(ws_message::txt(R"({"event":"dtmf","dtmf":"4","duration":"120"})"));
    }
    script.push_back(ws_message::bin({}));  // the end of the stream
    const auto r = ws_script(s.port, "/jambonz", script, {"audio.jambonz.org", {}});
    CHECK(r.close_code == 1000);
    CHECK_MESSAGE(sent_finals(r, "caller") == ref0, "sent: " << joined(sent_finals(r, "caller")) << "\ndirect: " << joined(ref0));
    CHECK_MESSAGE(sent_finals(r, "callee") == ref1, "sent: " << joined(sent_finals(r, "callee")) << "\ndirect: " << joined(ref1));

    const auto rec = wait_ended_call(*s.server, "jambonz");
    CHECK(rec.start.external_id == "js-1");
    CHECK(rec.start.channel_labels == std::vector<std::string>{"caller", "callee"});
    CHECK(rec.start.metadata["agentId"] == "a7");
    CHECK(rec.start.metadata["from"] == "+15551234");
    CHECK(rec.end_reason == "end of stream");
    REQUIRE(rec.events.size() == 1);
    CHECK(rec.events[0].type == "dtmf");
    CHECK(rec.events[0].data["digit"] == "4");
    CHECK(record_finals(rec, 0) == ref0);
    CHECK(record_finals(rec, 1) == ref1);
  }

  TEST_CASE("mod_audio_fork, stereo named in the URL, ended by the switch's close: the finals reach the call") {
    served s;
    const auto ref0 = reference_call_finals(*s.engine, "pcm_s16le", 0, samples_per_20ms);
    const auto ref1 = reference_call_finals(*s.engine, "pcm_s16le", 1, samples_per_20ms);
    asio::io_context ioc;
    websocket::stream<tcp::socket> ws(ioc);
    ws.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.port));
    ws.set_option(websocket::stream_base::decorator(
        [](websocket::request_type& req) { req.set(http::field::sec_websocket_protocol, "audio.drachtio.org"); }));
    websocket::response_type res;
    ws.handshake(res, "127.0.0.1", "/audio_fork?mixType=stereo&sampleRate=8000");
    CHECK(res[http::field::sec_websocket_protocol] == "audio.drachtio.org");
    ws.text(true);
    ws.write(asio::buffer(std::string(R"({"to":"6173333456","from":"2061236666","callid":"fs-77"})")));
    ws.binary(true);
    for (const auto& f : stereo_frames()) ws.write(asio::buffer(f));
    // FreeSWITCH's uuid_audio_fork stop closes the connection; the call's audio is still transcribed.
    ws.close(websocket::close_code::normal);
    beast::error_code ec;
    for (;;) {
      beast::flat_buffer b;
      ws.read(b, ec);
      if (ec) break;
    }
    const auto rec = wait_ended_call(*s.server, "audio_fork");
    CHECK(rec.start.external_id == "fs-77");
    CHECK(rec.start.channel_labels == std::vector<std::string>{"caller", "callee"});
    CHECK(rec.end_reason == "switch closed");
    CHECK_MESSAGE(record_finals(rec, 0) == ref0, "call: " << joined(record_finals(rec, 0)) << "\ndirect: " << joined(ref0));
    CHECK_MESSAGE(record_finals(rec, 1) == ref1, "call: " << joined(record_finals(rec, 1)) << "\ndirect: " << joined(ref1));
  }

  TEST_CASE("audio fork hostile: audio first, bad metadata, bad URL, huge frame: each refused clearly, an honest stream is untouched") {
    config::sluice_config cfg;
    cfg.server.max_message_bytes = 64 * 1024;
    served s(cfg);
    const auto want = reference_call_finals(*s.engine, "pcm_s16le", 0, 800);
    honest_stream honest(s.port);

    auto first_error = [](const ws_result& r) {
      REQUIRE_FALSE(r.messages.empty());
      CHECK(r.messages.front()["type"] == "error");
      return r.messages.front()["data"]["reason"].get<std::string>();
    };
    const std::vector<uint8_t> audio(640, 0);
    auto r = ws_script(s.port, "/jambonz", {ws_message::bin(audio)});
    CHECK(r.close_code == 1008);
    CHECK(first_error(r) == "binary audio before the metadata text frame");
    r = ws_script(s.port, "/jambonz", {ws_message::txt("callSid=1")});
    CHECK(r.close_code == 1003);
    CHECK(first_error(r).find("not JSON") != std::string::npos);
    r = ws_script(s.port, "/jambonz", {ws_message::txt(R"({"sampleRate":11025,"mixType":"stereo"})")});
    CHECK(r.close_code == 1003);
    CHECK(first_error(r).find("11025 is not supported") != std::string::npos);
    r = ws_script(s.port, "/audio_fork", {ws_message::txt(R"({"mixType":["stereo"]})")});
    CHECK(r.close_code == 1003);
    CHECK(first_error(r) == "mixType must be a string");
    // A frame over server.max_message_bytes: Beast answers with close code 1009 and drops the
    // connection (a switch still writing sees it end instead; see server_test); the call it
    // opened ends with the error.
    r = ws_script(s.port, "/jambonz", {ws_message::txt(R"({"callSid":"big"})"), ws_message::bin(std::vector<uint8_t>(100 * 1024, 1))});
    CHECK_MESSAGE((r.close_code == 1009 || !r.error.empty()), r.error);
    for (const auto& m : r.messages) CHECK(m.value("type", "") != "transcription");
    {
      // A malformed query is refused before the upgrade.
      asio::io_context ioc;
      websocket::stream<tcp::socket> ws(ioc);
      ws.next_layer().connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.port));
      websocket::response_type res;
      beast::error_code ec;
      ws.handshake(res, "127.0.0.1", "/audio_fork?sampleRate=fast", ec);
      CHECK(ec);
      CHECK(res.result_int() == 400);
    }
    const auto got = honest.finish();
    CHECK_MESSAGE(got == want, "honest: " << joined(got) << "\ndirect: " << joined(want));
    const auto big = wait_ended_call(*s.server, "jambonz");
    CHECK(big.start.external_id == "big");
    CHECK(big.end_reason == "error: a message larger than server.max_message_bytes");
  }

  TEST_CASE("a switch sending faster than server.switch_max_speed is ended with 1008 naming the key, and an honest stream is untouched") {
    config::sluice_config cfg;
    cfg.server.switch_max_speed = 1.5;
    cfg.server.switch_burst_s = 4;
    served s(cfg);
    const auto want = reference_call_finals(*s.engine, "pcm_s16le", 0, 800);
    honest_stream honest(s.port);
    // The whole 27 s stereo call at network speed: 4 s of burst plus 1.5 x the few hundred ms
    // the sending takes pass, then the call is ended.
    std::vector<ws_message> script{ws_message::txt(R"({"callSid":"fast","sampleRate":8000,"mixType":"stereo"})")};
    for (auto& f : stereo_frames()) script.push_back(ws_message::bin(std::move(f)));
    const auto r = ws_script(s.port, "/jambonz", script);
    CHECK(r.close_code == 1008);
    MESSAGE("the fast switch was told: " << r.close_reason);
    CHECK(r.close_reason == "audio faster than 1.5x real time after a 4 s burst (server.switch_max_speed, switch_burst_s)");
    const auto rec = wait_ended_call(*s.server, "jambonz");
    CHECK(rec.start.external_id == "fast");
    CHECK(rec.end_reason == "error: " + r.close_reason);

    const auto got = honest.finish();
    CHECK_MESSAGE(got == want, "honest: " << joined(got) << "\ndirect: " << joined(want));
  }
}
