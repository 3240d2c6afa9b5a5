// End-to-end tests of the sluice CLI: the real binary on real files.

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "tests/common/audio_tools.hpp"
#include "tests/common/command.hpp"
#include "tests/common/word_errors.hpp"

using sluice::test::word_edits;
using sluice::test::words_of;

namespace {

struct run_result {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs the CLI with `args`, capturing stdout and stderr.
run_result sluice_cli(const std::string& args, const sluice::test::temp_dir& tmp) {
  const std::string err_path = tmp.file("stderr.txt");
  std::string cmd = std::string(SLUICE_CLI) + " " + args + " 2>" + err_path;
  auto [status, out] = sluice::test::run_capture(cmd);
  run_result r;
  r.status = status;
  r.out = std::move(out);
  auto e = sluice::test::read_bytes(err_path);
  r.err.assign(e.begin(), e.end());
  return r;
}

const std::string sample_call = SLUICE_TEST_DATA_DIR "/sample_call_8k_mulaw_stereo.wav";

}  // namespace

TEST_SUITE("cli") {
  TEST_CASE("probe reports the bundled 8 kHz mu-law stereo call") {
    sluice::test::temp_dir tmp;
    auto r = sluice_cli("probe --json " + sample_call, tmp);
    REQUIRE_MESSAGE(r.status == 0, r.err);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j.size() == 1);
    CHECK(j[0]["container"] == "wav");
    CHECK(j[0]["codec"] == "mulaw");
    CHECK(j[0]["sample_rate"] == 8000);
    CHECK(j[0]["channels"] == 2);
    CHECK(j[0]["duration_s"].get<double>() > 20.0);
  }

  TEST_CASE("segment finds the agent's and the customer's turns on their own channels") {
    sluice::test::temp_dir tmp;
    auto r = sluice_cli("segment " + sample_call, tmp);
    REQUIRE_MESSAGE(r.status == 0, r.err);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["channels"].size() == 2);
    // The sample has three agent turns (left) and two customer turns (right), never overlapping.
    auto agent = j["channels"][0]["speech_ms"];
    auto customer = j["channels"][1]["speech_ms"];
    CHECK(agent.size() >= 3);
    CHECK(customer.size() >= 2);
    CHECK(agent[0][0].get<int>() < 1000);                         // the call opens with the agent
    CHECK(customer[0][0].get<int>() > agent[0][1].get<int>());    // the customer answers after
    for (const auto& ch : j["channels"])
      for (const auto& s : ch["segments"]) {
        CHECK(s["end_ms"].get<int>() > s["start_ms"].get<int>());
        CHECK(s["end_ms"].get<int>() - s["start_ms"].get<int>() <= 15000);
      }
  }

  TEST_CASE("config overrides on the command line change behaviour and bad ones are refused") {
    sluice::test::temp_dir tmp;
    auto ok = sluice_cli("config --vad.threshold_db=12.5 --set audio.denoise=true", tmp);
    REQUIRE_MESSAGE(ok.status == 0, ok.err);
    CHECK(ok.out.find("threshold_db = 12.5") != std::string::npos);
    CHECK(ok.out.find("denoise = true") != std::string::npos);

    auto bad = sluice_cli("config --vad.threshold_db=500", tmp);
    CHECK(bad.status == 2);
    CHECK(bad.err.find("vad.threshold_db = 500 is out of range: allowed 1 .. 40") != std::string::npos);

    auto cross = sluice_cli("config --segment.min_s=30 --segment.max_s=20", tmp);
    CHECK(cross.status == 2);
    CHECK(cross.err.find("min_s must be smaller than max_s") != std::string::npos);

    auto file = sluice_cli("config --config " SLUICE_SOURCE_DIR "/config/sluice.toml", tmp);
    CHECK(file.status == 0);
  }

  TEST_CASE("a corrupt file is a clear error for that file, the others are still processed") {
    sluice::test::temp_dir tmp;
    auto bytes = sluice::test::read_bytes(sample_call);
    bytes.resize(30);  // cut inside the fmt chunk
    sluice::test::write_bytes(tmp.file("cut.wav"), bytes);
    sluice::test::write_bytes(tmp.file("junk.wav"), std::vector<uint8_t>(1000, 0x5a));
    auto r = sluice_cli("probe " + tmp.file("cut.wav") + " " + tmp.file("junk.wav") + " " + sample_call, tmp);
    CHECK(r.status == 1);
    CHECK(r.err.find("cut.wav") != std::string::npos);
    CHECK(r.err.find("junk.wav") != std::string::npos);
    CHECK(r.out.find("sample_call_8k_mulaw_stereo.wav: wav, mulaw, 8000 Hz, 2 channels") != std::string::npos);
  }

  TEST_CASE("unknown commands and missing files are usage or input errors, not crashes") {
    sluice::test::temp_dir tmp;
    CHECK(sluice_cli("frobnicate", tmp).status == 2);
    auto missing = sluice_cli("segment /nonexistent.wav", tmp);
    CHECK(missing.status == 1);
    CHECK(missing.err.find("/nonexistent.wav") != std::string::npos);
    auto no_model = sluice_cli("serve --server.port=0", tmp);  // no models/ in the temp dir
    CHECK(no_model.status == 1);
    CHECK(no_model.err.find("model.json") != std::string::npos);
    CHECK(sluice_cli("serve extra-argument", tmp).status == 2);
    CHECK(sluice_cli("stream", tmp).status == 2);
    CHECK(sluice_cli("stream " + sample_call + " --url http://x", tmp).status == 2);
    auto refused = sluice_cli("stream " + sample_call + " --url ws://127.0.0.1:1/v1/stream", tmp);
    CHECK(refused.status == 1);
    CHECK(refused.err.find("cannot connect") != std::string::npos);
  }

  TEST_CASE("devices always lists the CPU") {
    sluice::test::temp_dir tmp;
    auto r = sluice_cli("devices", tmp);
    REQUIRE(r.status == 0);
    CHECK(r.out.rfind("cpu", 0) == 0);
  }
}

TEST_SUITE("cli-transcribe") {
  // The tiny random model makes no sense of speech, but the whole pipeline and every output
  // format run on it exactly as on a trained one; text accuracy is tested with the default model.
  const std::string tiny = "--model.dir=" SLUICE_TEST_DATA_DIR "/tiny_model ";

  TEST_CASE("json: per-channel segments with agent/customer labels and word times inside them") {
    sluice::test::temp_dir tmp;
    auto r = sluice_cli("transcribe " + tiny + "--format json " + sample_call, tmp);
    REQUIRE_MESSAGE(r.status == 0, r.err);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["channels"].size() == 2);
    CHECK(j["channels"][0]["label"] == "agent");
    CHECK(j["channels"][1]["label"] == "customer");
    CHECK(j["input_sample_rate"] == 8000);
    int words = 0;
    for (const auto& ch : j["channels"])
      for (const auto& s : ch["segments"]) {
        int64_t prev = s["start_ms"].get<int64_t>();
        for (const auto& w : s["words"]) {
          CHECK(w["start_ms"].get<int64_t>() >= prev);
          CHECK(w["end_ms"].get<int64_t>() > w["start_ms"].get<int64_t>());
          CHECK(w["end_ms"].get<int64_t>() <= s["end_ms"].get<int64_t>());
          CHECK(w["confidence"].get<double>() >= 0.0);
          CHECK(w["confidence"].get<double>() <= 1.0);
          prev = w["end_ms"].get<int64_t>();
          ++words;
        }
      }
    CHECK(words > 0);
  }

  TEST_CASE("transcribe: corrupt files among good ones are an error for each, the rest get documents in order") {
    // The files are decoded ahead on a few preparing threads; a file that fails there must
    // still be reported by name, and not hold up or drop the files around it.
    sluice::test::temp_dir tmp;
    const std::string wav = tmp.file("hello.wav");
    REQUIRE(sluice::test::espeak("hello there", wav));
    sluice::test::write_bytes(tmp.file("junk.wav"), std::vector<uint8_t>(1000, 0x5a));
    auto cut = sluice::test::read_bytes(sample_call);
    cut.resize(30);  // cut inside the fmt chunk
    sluice::test::write_bytes(tmp.file("cut.wav"), cut);
    std::vector<std::string> good;
    for (const char* n : {"a.wav", "b.wav", "c.wav", "d.wav"}) {
      good.push_back(tmp.file(n));
      std::filesystem::copy_file(wav, good.back());
    }
    const std::vector<std::string> names = {good[0], tmp.file("junk.wav"), good[1], good[2], tmp.file("cut.wav"), good[3]};
    std::string files;
    for (const auto& n : names) files += " " + n;
    auto r = sluice_cli("transcribe " + tiny + "--decoder.mode=greedy --format json" + files, tmp);
    CHECK(r.status == 1);
    CHECK(r.err.find("junk.wav") != std::string::npos);
    CHECK(r.err.find("cut.wav") != std::string::npos);
    std::vector<std::string> docs;
    for (std::size_t at = r.out.find("\"file\""); at != std::string::npos; at = r.out.find("\"file\"", at + 1)) {
      const auto open = r.out.find('"', r.out.find(':', at) + 1);
      docs.push_back(r.out.substr(open + 1, r.out.find('"', open + 1) - open - 1));
    }
    CHECK(docs == good);
  }

  TEST_CASE("more files than engine.max_channels: each opens as another drains and none is refused") {
    // With one channel at a time, the next file's channel is asked for as soon as the previous
    // one has drained; the engine must already count its slot as free then (it used to free it
    // only on the channel's down message, and 6-14 of 40 files were refused as "engine full").
    sluice::test::temp_dir tmp;
    const std::string wav = tmp.file("hello.wav");
    REQUIRE(sluice::test::espeak("hello there", wav));
    std::string files;
    for (int i = 0; i < 40; ++i) files += " " + wav;
    // No queue-wait refusals on a busy machine: only the slot accounting is under test.
    auto r = sluice_cli("transcribe " + tiny +
                            "--engine.max_channels=1 --engine.max_queue_wait_ms=600000 --decoder.mode=greedy "
                            "--format json" + files,
                        tmp);
    CHECK_MESSAGE(r.status == 0, r.err);
    CHECK(r.err.find("engine full") == std::string::npos);
    // Every file gets its document (refused ones did too: the two checks above catch the bug).
    std::size_t docs = 0;
    for (std::size_t at = r.out.find("\"file\""); at != std::string::npos; at = r.out.find("\"file\"", at + 1)) ++docs;
    CHECK(docs == 40);
  }

  TEST_CASE("files open a few channels at a time: four per lane by default, a stereo file whole, the same text as all at once") {
    // Each open file holds its audio and two threads (config/engine_config.hpp, offline_channels).
    sluice::test::temp_dir tmp;
    const std::string wav = tmp.file("hello.wav");
    REQUIRE(sluice::test::espeak("hello there how are you", wav));
    std::string files;
    for (int i = 0; i < 6; ++i) files += " " + wav;
    // The channels open after each file opened, from the debug line cmd_transcribe writes then.
    const auto open_counts = [](const std::string& err) {
      std::vector<int> counts;
      const std::string tag = "channels open";
      for (std::size_t at = err.find(tag); at != std::string::npos; at = err.find(tag, at + 1)) {
        std::size_t b = err.rfind(", ", at);
        REQUIRE(b != std::string::npos);
        counts.push_back(std::stoi(err.substr(b + 2, at - b - 3)));
      }
      return counts;
    };
    const std::string common = "transcribe " + tiny + "--engine.max_queue_wait_ms=600000 --decoder.mode=greedy "
                               "--log.level=debug --format json ";
    // One lane, offline_channels 0: four channels at a time.
    auto a = sluice_cli(common + "--engine.lanes=1 --engine.offline_channels=0" + files + " " + sample_call, tmp);
    REQUIRE_MESSAGE(a.status == 0, a.err);
    const auto ca = open_counts(a.err);
    REQUIRE(ca.size() == 7);
    for (int n : ca) CHECK(n <= 4);
    // One channel at a time: the stereo call still opens whole (2), alone, and nothing is refused.
    auto b = sluice_cli(common + "--engine.lanes=1 --engine.offline_channels=1" + files + " " + sample_call, tmp);
    REQUIRE_MESSAGE(b.status == 0, b.err);
    const auto cb = open_counts(b.err);
    REQUIRE(cb.size() == 7);
    for (std::size_t i = 0; i < 6; ++i) CHECK(cb[i] == 1);
    CHECK(cb[6] == 2);
    // Every file at once (as before offline_channels): the same documents, in the same order.
    auto c = sluice_cli(common + "--engine.lanes=1 --engine.offline_channels=64" + files + " " + sample_call, tmp);
    REQUIRE_MESSAGE(c.status == 0, c.err);
    const auto cc = open_counts(c.err);
    REQUIRE(cc.size() == 7);
    CHECK(cc[5] == 6);
    CHECK(cc[6] == 8);
    CHECK(a.out == c.out);
    CHECK(b.out == c.out);
    CHECK(c.out.find("\"text\"") != std::string::npos);
  }

  TEST_CASE("stereo files with room for three channels: each waits until both its channels fit, none is refused") {
    // engine.max_channels 3: after one stereo call (2 open) the next does not fit; it used to be
    // opened anyway and its second channel was refused ("engine full") and went missing.
    sluice::test::temp_dir tmp;
    auto r = sluice_cli("transcribe " + tiny +
                            "--engine.max_channels=3 --engine.offline_channels=8 --engine.max_queue_wait_ms=600000 "
                            "--decoder.mode=greedy --format json " + sample_call + " " + sample_call + " " + sample_call,
                        tmp);
    CHECK_MESSAGE(r.status == 0, r.err);
    CHECK(r.err.find("engine full") == std::string::npos);
    std::size_t docs = 0, channels = 0;
    for (std::size_t at = r.out.find("\"file\""); at != std::string::npos; at = r.out.find("\"file\"", at + 1)) ++docs;
    for (std::size_t at = r.out.find("\"customer\""); at != std::string::npos; at = r.out.find("\"customer\"", at + 1)) ++channels;
    CHECK(docs == 3);
    CHECK(channels == 3);  // every call's second channel is there
  }

  TEST_CASE("the default model with its word LM: stdout holds only the JSON, logs go to stderr") {
    sluice::test::temp_dir tmp;
    auto r = sluice_cli("transcribe --model.dir=" SLUICE_SOURCE_DIR "/models/default --format json " + sample_call, tmp);
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(r.err.find("word LM") != std::string::npos);
    auto j = nlohmann::json::parse(r.out);  // throws (fails the test) on any stray log line
    CHECK(j["channels"].size() == 2);
  }

  TEST_CASE("srt and vtt cues are numbered, well-formed and in time order") {
    sluice::test::temp_dir tmp;
    auto srt = sluice_cli("transcribe " + tiny + "--format srt " + sample_call, tmp);
    REQUIRE_MESSAGE(srt.status == 0, srt.err);
    CHECK(srt.out.rfind("1\n00:00:0", 0) == 0);
    CHECK(srt.out.find(" --> ") != std::string::npos);
    CHECK(srt.out.find(",") != std::string::npos);  // SRT uses a comma before milliseconds
    auto vtt = sluice_cli("transcribe " + tiny + "--format vtt " + sample_call, tmp);
    REQUIRE(vtt.status == 0);
    CHECK(vtt.out.rfind("WEBVTT\n\n", 0) == 0);
    CHECK(vtt.out.find("<v agent>") != std::string::npos);
    CHECK(vtt.out.find("<v customer>") != std::string::npos);
    // Cue start times never go backwards.
    std::string last = "00:00:00.000";
    for (std::size_t p = vtt.out.find(" --> "); p != std::string::npos; p = vtt.out.find(" --> ", p + 1)) {
      std::string start = vtt.out.substr(p - 12, 12);
      CHECK(start >= last);
      last = start;
    }
  }

  TEST_CASE("bad arguments, hotword files and models are clear errors") {
    sluice::test::temp_dir tmp;
    CHECK(sluice_cli("transcribe " + tiny + "--format doc " + sample_call, tmp).err.find("choose text, json, srt or vtt") !=
          std::string::npos);
    auto weight = sluice_cli("transcribe " + tiny + "--hotword-weight 3x " + sample_call, tmp);
    CHECK(weight.status == 2);
    CHECK(weight.err.find("--hotword-weight 3x: give a number from 0 to 100") != std::string::npos);
    auto no_model = sluice_cli("transcribe --model.dir=/nonexistent " + sample_call, tmp);
    CHECK(no_model.status == 1);
    CHECK(no_model.err.find("/nonexistent") != std::string::npos);
    auto no_hot = sluice_cli("transcribe " + tiny + "--hotwords /nonexistent.txt " + sample_call, tmp);
    CHECK(no_hot.status == 1);
    CHECK(no_hot.err.find("hotwords file /nonexistent.txt") != std::string::npos);
    sluice::test::write_bytes(tmp.file("hot.txt"), {'n', 'o', 'r', 't', 'h', 'w', 'i', 'n', 'd', ' ', '4', '\n'});
    auto hot = sluice_cli("transcribe " + tiny + "--hotwords " + tmp.file("hot.txt") + " " + sample_call, tmp);
    CHECK_MESSAGE(hot.status == 0, hot.err);
  }
}

// Accuracy end to end with the shipped default model. The committed recording is a held-out
// test_phone utterance of the first default model's data (a sentence never trained on, through the
// phone channel, saved as 8 kHz mu-law); its .txt is the true transcript, never the model's output.
// The first model was picked because it transcribed this recording exactly; the fine-tuned model
// that replaced it (MODEL_CARD.md) got one word wrong ("tenth" -> "then"), the session-27 one none. The bound is not set
// from that measurement: it is issue 10's target for 8 kHz phone speech with noise, WER <= 25%
// (4 word errors in these 16 words); a broken front end, model or decoder gives far more.
TEST_SUITE("accuracy") {
  // Accuracy is the recogniser's: measured on the words as spoken (--lexical), which the
  // reference transcripts are; the display form is tested in the "postproc" suite.
  const std::string model = "--model.dir=" SLUICE_SOURCE_DIR "/models/default --lexical ";
  constexpr double phone_wer_target = 0.25;

  TEST_CASE("sluice transcribe turns the committed phone recording into its text within the phone-speech WER target") {
    sluice::test::temp_dir tmp;
    auto r = sluice_cli("transcribe " + model + SLUICE_TEST_DATA_DIR "/e2e/cancelled_march_8k_mulaw.wav", tmp);
    REQUIRE(r.status == 0);
    auto want = sluice::test::read_bytes(SLUICE_TEST_DATA_DIR "/e2e/cancelled_march_8k_mulaw.txt");
    const auto ref = words_of(std::string(want.begin(), want.end()));
    const auto hyp = words_of(r.out);
    REQUIRE(ref.size() == 16);
    const double wer = static_cast<double>(word_edits(ref, hyp)) / static_cast<double>(ref.size());
    MESSAGE("transcript: " << r.out << "word error rate: " << wer);
    CHECK(wer <= phone_wer_target);
  }

  // A codec, a resampler or a jitter buffer moves the audio by a few milliseconds; the recogniser
  // frames it every 10 ms and subsamples x4, so each offset shows the model another phase of the
  // same speech. The session-22 retrain changed 3-6 words of this sentence at such offsets (Opus
  // over RTP gave 0.375), and on the held-out sets' utterances every model measured moves 30-67% of
  // its words at 2.5 ms (evaluate.py --shift-ms, MODEL_CARD); the text must stay within the phone
  // WER target at each 2.5 ms step through one 40 ms subsampled frame.
  TEST_CASE("the phone recording arriving 2.5, 5, ... 40 ms later stays within the phone WER target at each delay") {
    sluice::test::temp_dir tmp;
    const std::string wav = SLUICE_TEST_DATA_DIR "/e2e/cancelled_march_8k_mulaw.wav";
    auto want = sluice::test::read_bytes(SLUICE_TEST_DATA_DIR "/e2e/cancelled_march_8k_mulaw.txt");
    const auto ref = words_of(std::string(want.begin(), want.end()));
    // 8 kHz samples: 20 samples = 2.5 ms, up to 320 = 40 ms (one subsampled frame).
    for (int samples = 20; samples <= 320; samples += 20) {
      CAPTURE(samples);
      const auto shifted = tmp.file("shift" + std::to_string(samples) + ".wav");
      REQUIRE(sluice::test::sox("'" + wav + "' -e mu-law '" + shifted + "' pad " + std::to_string(samples) + "s 0"));
      auto r = sluice_cli("transcribe " + model + shifted, tmp);
      REQUIRE(r.status == 0);
      const double wer = static_cast<double>(word_edits(ref, words_of(r.out))) / static_cast<double>(ref.size());
      MESSAGE((samples / 8.0) << " ms later: " << r.out << "word error rate: " << wer);
      CHECK(wer <= phone_wer_target);
    }
  }

  // model.math = "bf16" (products by the weights with bf16 inputs, f32 accumulation) is held to
  // the same phone-speech target as f32; where the CPU has no AVX-512 BF16 it must be refused
  // at start with a clear reason (and the accuracy part is skipped, visibly).
  TEST_CASE("model.math = bf16: the phone recording within the phone WER target, or a clear refusal without AVX-512 BF16") {
    sluice::test::temp_dir tmp;
    const std::string wav = SLUICE_TEST_DATA_DIR "/e2e/cancelled_march_8k_mulaw.wav";
    auto r = sluice_cli("transcribe " + model + "--model.math=bf16 " + wav, tmp);
    if (r.status != 0) {
      CHECK(r.err.find("AVX-512 BF16") != std::string::npos);
      MESSAGE("SKIPPED: no AVX-512 BF16 on this CPU: " << r.err);
      return;
    }
    CHECK(r.err.find("model math: bf16") != std::string::npos);
    const auto ref = words_of(sluice::test::read_text(SLUICE_TEST_DATA_DIR "/e2e/cancelled_march_8k_mulaw.txt"));
    const double wer = static_cast<double>(word_edits(ref, words_of(r.out))) / static_cast<double>(ref.size());
    MESSAGE("bf16: " << r.out << "word error rate: " << wer);
    CHECK(wer <= phone_wer_target);
    auto bad = sluice_cli("transcribe " + model + "--model.math=f16 " + wav, tmp);
    CHECK(bad.status != 0);
    CHECK(bad.err.find("math") != std::string::npos);
  }

  // The beam search (characters + word LM at word ends, kept for comparison) is not held to the
  // target: it leaves word boundaries to the model and often glues words (models/default's
  // MODEL_CARD.md: its WER on the held-out sets is above greedy's); its text and WER are reported.
  TEST_CASE("decoder modes: lexicon (the default with an LM) stays within the phone WER target, beam and greedy run") {
    sluice::test::temp_dir tmp;
    const std::string wav = SLUICE_TEST_DATA_DIR "/e2e/cancelled_march_8k_mulaw.wav";
    auto want = sluice::test::read_bytes(SLUICE_TEST_DATA_DIR "/e2e/cancelled_march_8k_mulaw.txt");
    const auto ref = words_of(std::string(want.begin(), want.end()));
    for (const std::string mode : {"lexicon", "beam", "greedy"}) {
      CAPTURE(mode);
      auto r = sluice_cli("transcribe " + model + "--decoder.mode=" + mode + " " + wav, tmp);
      REQUIRE(r.status == 0);
      CHECK(!words_of(r.out).empty());
      const double wer = static_cast<double>(word_edits(ref, words_of(r.out))) / static_cast<double>(ref.size());
      MESSAGE(mode << ": " << r.out << "word error rate: " << wer);
      if (mode == "lexicon") CHECK(wer <= phone_wer_target);
    }
    auto no_vocabulary = sluice_cli("transcribe " + model + "--decoder.mode=lexicon --no-lm " + wav, tmp);
    CHECK(no_vocabulary.status == 1);
    CHECK(no_vocabulary.err.find("needs a vocabulary") != std::string::npos);
    auto no_lexicon = sluice_cli("transcribe " + model + "--decoder.lexicon_file=/nonexistent/words.txt " + wav, tmp);
    CHECK(no_lexicon.status == 1);
    CHECK(no_lexicon.err.find("cannot open lexicon file /nonexistent/words.txt") != std::string::npos);
  }

  // An unrelated hotword must not come out. It may still move an unknown word's letters: its
  // partial matches are boosted while they last (and refunded when they fail), which changes what
  // the beam keeps; with the session-27 default model "vanderbilt" turned "... in ry" into
  // "... in er y" for quisenberry (the earlier model printed the same text both ways).
  TEST_CASE("hotwords: rare names are recognised only with biasing, and an unrelated hotword never comes out") {
    sluice::test::temp_dir tmp;
    for (const std::string name : {"karpinski", "quisenberry", "okonkwo", "castellanos"}) {
      CAPTURE(name);
      const std::string wav = tmp.file(name + ".wav");
      REQUIRE(sluice::test::espeak("my name is, " + name + ".", wav, "en-us", 140));
      const std::string hw = tmp.file("hotwords.txt"), other = tmp.file("other.txt");
      sluice::test::write_bytes(hw, std::vector<uint8_t>(name.begin(), name.end()));
      const std::string unrelated = "vanderbilt";
      sluice::test::write_bytes(other, std::vector<uint8_t>(unrelated.begin(), unrelated.end()));
      auto plain = sluice_cli("transcribe " + model + wav, tmp);
      auto biased = sluice_cli("transcribe " + model + "--hotwords " + hw + " --hotword-weight 5 " + wav, tmp);
      auto wrong = sluice_cli("transcribe " + model + "--hotwords " + other + " --hotword-weight 5 " + wav, tmp);
      REQUIRE(plain.status == 0);
      REQUIRE(biased.status == 0);
      CHECK(plain.out.find(name) == std::string::npos);
      CHECK(biased.out.find(name) != std::string::npos);
      REQUIRE(wrong.status == 0);
      CHECK(wrong.out.find(unrelated) == std::string::npos);
      CHECK(wrong.out.find(name) == std::string::npos);
      if (wrong.out != plain.out) MESSAGE("the unrelated hotword changed '" << plain.out << "' to '" << wrong.out << "'");
    }
  }
}

TEST_SUITE("keys") {
  TEST_CASE("sluice keys add prints a key once and stores only its salted SHA-256 (checked with Python's hashlib)") {
    sluice::test::temp_dir tmp;
    const std::string file = tmp.file("keys");
    auto added = sluice_cli("keys add --tenant acme --scopes stream,read --file " + file, tmp);
    REQUIRE_MESSAGE(added.status == 0, added.err);
    REQUIRE(added.out.size() == 3 + 16 + 1 + 64 + 1);  // sk_<id>_<secret>\n
    const std::string key = added.out.substr(0, added.out.size() - 1);
    const std::string id = key.substr(3, 16), secret = key.substr(20);
    CHECK(added.err.find(id) != std::string::npos);
    CHECK(added.err.find(secret) == std::string::npos);
    auto bytes = sluice::test::read_bytes(file);
    const std::string stored(bytes.begin(), bytes.end());
    CHECK(stored.find(secret) == std::string::npos);
    CHECK(stored.find(key) == std::string::npos);
    // The stored line: id tenant scopes salt hash, hash = SHA-256(salt || key).
    const std::string check_py = tmp.file("check.py");
    const std::string py =
        "import hashlib,sys\nid_,tenant,scopes,salt,h=open(sys.argv[1]).read().split()\n"
        "print(id_, tenant, scopes, hashlib.sha256(bytes.fromhex(salt)+sys.argv[2].encode()).hexdigest()==h)\n";
    sluice::test::write_bytes(check_py, std::vector<uint8_t>(py.begin(), py.end()));
    const auto check = sluice::test::run_capture("/usr/bin/python3 " + check_py + " " + file + " " + key);
    CHECK(check.status == 0);
    CHECK(check.out == id + " acme stream,read True\n");

    auto second = sluice_cli("--auth.keys_file=" + file + " keys add --tenant globex --scopes admin", tmp);
    REQUIRE(second.status == 0);
    CHECK(second.out != added.out);
    auto list = sluice_cli("keys list --file " + file, tmp);
    REQUIRE(list.status == 0);
    const std::string id2 = second.out.substr(3, 16);
    CHECK(list.out.find(id + " acme stream,read\n") != std::string::npos);
    CHECK(list.out.find(id2 + " globex admin\n") != std::string::npos);
    REQUIRE(sluice_cli("keys revoke " + id + " --file " + file, tmp).status == 0);
    CHECK(sluice_cli("keys list --file " + file, tmp).out == id2 + " globex admin\n");
    CHECK(sluice_cli("keys revoke " + id + " --file " + file, tmp).status == 1);
  }

  TEST_CASE("sluice keys: bad tenants and scopes and missing files are clear errors") {
    sluice::test::temp_dir tmp;
    const std::string file = tmp.file("keys");
    auto bad_scope = sluice_cli("keys add --tenant acme --scopes stream,write --file " + file, tmp);
    CHECK(bad_scope.status == 2);
    CHECK(bad_scope.err.find("unknown scope \"write\"") != std::string::npos);
    auto bad_tenant = sluice_cli("keys add --tenant a/b --scopes read --file " + file, tmp);
    CHECK(bad_tenant.status == 2);
    CHECK(bad_tenant.err.find("tenant \"a/b\"") != std::string::npos);
    auto no_file = sluice_cli("keys add --tenant acme --scopes read", tmp);
    CHECK(no_file.status == 2);
    CHECK(no_file.err.find("auth.keys_file") != std::string::npos);
    CHECK(sluice_cli("keys list --file " + tmp.file("missing"), tmp).status == 1);
    CHECK(sluice_cli("keys frobnicate --file " + file, tmp).status == 2);
    CHECK(sluice::test::read_bytes(file).empty());  // nothing was written by the refused adds
  }
}

// Results' two forms through the CLI, and redaction of a spoken card number in every output
// format and in the log at debug level (issue 13). The card is the public test number
// 4111 1111 1111 1111, spoken digit by digit by espeak-ng.
TEST_SUITE("postproc") {
  // No start-up placement probe: its log line prints measured frames/s, which can hold "1111"
  // by chance (it printed "111141" once) and would read as a leaked digit group.
  const std::string model = "--model.dir=" SLUICE_SOURCE_DIR "/models/default --engine.placement_probe_ms=0 ";

  // The card's digit groups (4111, 1111) anywhere, two spoken digit words in a row, or the words
  // a grouped reading uses ("eleven", "thousand"). Other numbers (times, log timestamps) pass.
  // The output with the test's temporary folder taken out: its name is random digits, which may
  // hold "4111" or "1111" by chance (it did once: sluice-test-41113990813241582242), and the
  // JSON result and the debug log name the input file.
  std::string without_dir(std::string text, const sluice::test::temp_dir& tmp) {
    const std::string dir = tmp.path().string();
    for (std::size_t at = text.find(dir); at != std::string::npos; at = text.find(dir, at)) text.erase(at, dir.size());
    return text;
  }

  std::string card_leak(const std::string& text) {
    const std::vector<std::string> digit_words = {"zero", "oh",    "one",   "two",  "three",  "four",  "five",
                                                  "six",  "seven", "eight", "nine", "double", "triple"};
    auto is_digit_word = [&](const std::string& w) {
      return std::find(digit_words.begin(), digit_words.end(), w) != digit_words.end();
    };
    std::string prev;
    for (const auto& raw : words_of(text)) {
      if (raw.find("4111") != std::string::npos || raw.find("1111") != std::string::npos) return raw;
      std::string w;
      for (const char c : raw)
        if (std::isalpha(static_cast<unsigned char>(c))) w += static_cast<char>(std::tolower(c));
      if (w == "eleven" || w == "thousand") return raw;
      if (is_digit_word(w) && is_digit_word(prev)) return prev + " " + w;
      prev = w;
    }
    return {};
  }

  TEST_CASE("text prints the display form, --lexical the spoken words, json carries both") {
    sluice::test::temp_dir tmp;
    const std::string wav = SLUICE_TEST_DATA_DIR "/e2e/cancelled_march_8k_mulaw.wav";
    auto display = sluice_cli("transcribe " + model + wav, tmp);
    auto lexical = sluice_cli("transcribe " + model + "--lexical " + wav, tmp);
    auto json = sluice_cli("transcribe " + model + "--format json " + wav, tmp);
    REQUIRE(display.status == 0);
    REQUIRE(lexical.status == 0);
    REQUIRE(json.status == 0);
    MESSAGE("display: " << display.out << "lexical: " << lexical.out);
    // The recording says "... twenty dollars and ninety five cents": written as money.
    CHECK(display.out.find("$20.95") != std::string::npos);
    CHECK(lexical.out.find("twenty dollars and ninety five cents") != std::string::npos);
    CHECK(display.out.front() == 'I');  // a sentence starts with a capital
    auto j = nlohmann::json::parse(json.out);
    const auto& seg = j["channels"][0]["segments"][0];
    CHECK(seg["display_text"].get<std::string>() + "\n" == display.out);
    CHECK(seg["text"].get<std::string>() + "\n" == lexical.out);
    CHECK(seg["display_words"].size() < seg["words"].size());  // "$20.95" is one written token of five words
    CHECK(seg["redactions"].empty());
  }

  TEST_CASE("a spoken card number never leaks into json, text, srt, vtt or the debug log, json lists its span") {
    sluice::test::temp_dir tmp;
    const std::string wav = tmp.file("card.wav");
    REQUIRE(sluice::test::espeak("my card number is 4 1 1 1, 1 1 1 1, 1 1 1 1, 1 1 1 1.", wav, "en-us", 150));
    const std::string debug = "--log.level=debug ";
    for (const std::string format : {"json", "text", "srt", "vtt"}) {
      for (const std::string form : {"", "--lexical "}) {
        CAPTURE(format);
        CAPTURE(form);
        auto r = sluice_cli("transcribe " + model + debug + form + "--format " + format + " " + wav, tmp);
        REQUIRE_MESSAGE(r.status == 0, r.err);
        CHECK_MESSAGE(card_leak(without_dir(r.out, tmp)).empty(), r.out);
        CHECK_MESSAGE(card_leak(without_dir(r.err, tmp)).empty(), r.err);
        if (format == "json" && form.empty()) {
          auto j = nlohmann::json::parse(r.out);
          int cards = 0;
          for (const auto& s : j["channels"][0]["segments"])
            for (const auto& red : s["redactions"]) {
              cards += red["kind"] == "card";
              CHECK(red["end_ms"].get<int64_t>() > red["start_ms"].get<int64_t>());
            }
          CHECK(cards >= 1);
        }
      }
    }
    // Control: the same file with redaction off shows the digits, so the check above can fail.
    auto open = sluice_cli("transcribe " + model + "--postproc.redact=false " + wav, tmp);
    REQUIRE(open.status == 0);
    CHECK_MESSAGE(!card_leak(open.out).empty(), open.out);
  }

  TEST_CASE("a card number read over two utterances never leaks the second half, json lists a span in each") {
    // Two utterances 8 s apart (the file is cut into two segments, so two finals): the context
    // word and the first half in the first, the second half alone in the second.
    sluice::test::temp_dir tmp;
    const std::string first = tmp.file("first.wav"), padded = tmp.file("padded.wav"), second = tmp.file("second.wav");
    const std::string wav = tmp.file("card_split.wav");
    REQUIRE(sluice::test::espeak("my card number is 4 1 1 1, 1 1 1 1.", first, "en-us", 150));
    REQUIRE(sluice::test::espeak("1 1 1 1, 1 1 1 1.", second, "en-us", 150));
    REQUIRE(sluice::test::sox("'" + first + "' '" + padded + "' pad 0 8"));
    REQUIRE(sluice::test::sox("'" + padded + "' '" + second + "' '" + wav + "'"));
    const std::string debug = "--log.level=debug ";
    for (const std::string args : {"--format json ", "--lexical --format json ", "--format text ", "--format srt ",
                                   "--format vtt "}) {
      CAPTURE(args);
      auto r = sluice_cli("transcribe " + model + debug + args + wav, tmp);
      REQUIRE_MESSAGE(r.status == 0, r.err);
      CHECK_MESSAGE(card_leak(without_dir(r.out, tmp)).empty(), r.out);
      CHECK_MESSAGE(card_leak(without_dir(r.err, tmp)).empty(), r.err);
      if (args == "--format json ") {
        const auto j = nlohmann::json::parse(r.out);
        const auto& segs = j["channels"][0]["segments"];
        REQUIRE_MESSAGE(segs.size() == 2, r.out);  // else the number was not split at all
        for (const auto& seg : segs) {
          CHECK_MESSAGE(!seg["redactions"].empty(), seg.dump());
          for (const auto& red : seg["redactions"])
            CHECK(red["end_ms"].get<int64_t>() > red["start_ms"].get<int64_t>());
        }
      }
    }
    // Control: each final redacted alone (no carrying, as before) shows the second half. Read in
    // the spoken words (--lexical): the display form writes digits the check above looks for only
    // in groups of four ("11 we one" from the session-27 model: a leak, but not one it names).
    auto alone = sluice_cli("transcribe " + model + "--lexical --postproc.redact_carry_finals=0 " + wav, tmp);
    REQUIRE(alone.status == 0);
    CHECK_MESSAGE(!card_leak(alone.out).empty(), alone.out);
  }

  // decoder.alternatives: every segment's n best readings in the JSON.
  void check_alternatives(const nlohmann::json& seg, std::size_t most) {
    CAPTURE(seg.dump());
    REQUIRE(seg.contains("alternatives"));
    const auto& alts = seg["alternatives"];
    REQUIRE(alts.size() >= 1);
    CHECK(alts.size() <= most);
    CHECK(alts[0]["text"] == seg["text"]);  // the first is the segment's own reading
    CHECK(alts[0]["display_text"] == seg["display_text"]);
    CHECK(alts[0]["words"].size() == seg["words"].size());
    std::set<std::string> texts;
    double sum = 0;
    for (const auto& a : alts) {
      texts.insert(a["text"].get<std::string>());
      const double c = a["confidence"].get<double>();
      CHECK(c >= 0.0);
      CHECK(c <= 1.0);
      sum += c;
      for (const auto& w : a["words"]) {
        CHECK(w["end_ms"].get<int64_t>() > w["start_ms"].get<int64_t>());
        CHECK(w["start_ms"].get<int64_t>() >= seg["start_ms"].get<int64_t>());
      }
    }
    CHECK(texts.size() == alts.size());  // distinct readings
    CHECK(sum <= 1.0 + 1e-4);            // shares of one whole
  }

  TEST_CASE("alternatives: json lists each segment's n best, the first its own reading, decoded in the channel or the lane") {
    sluice::test::temp_dir tmp;
    const std::string wav = SLUICE_TEST_DATA_DIR "/e2e/cancelled_march_8k_mulaw.wav";
    auto plain = sluice_cli("transcribe " + model + "--format json " + wav, tmp);
    REQUIRE(plain.status == 0);
    const auto plain_json = nlohmann::json::parse(plain.out);
    const auto& plain_segs = plain_json["channels"][0]["segments"];
    for (const auto& seg : plain_segs) CHECK(!seg.contains("alternatives"));
    for (const std::string lane : {"false", "true"}) {
      CAPTURE(lane);
      auto r = sluice_cli("transcribe " + model + "--decoder.alternatives=4 --engine.lane_decoding=" + lane +
                              " --format json " + wav,
                          tmp);
      REQUIRE_MESSAGE(r.status == 0, r.err);
      const auto j = nlohmann::json::parse(r.out);
      std::size_t most = 0;
      for (const auto& seg : j["channels"][0]["segments"]) {
        check_alternatives(seg, 4);
        most = std::max(most, seg["alternatives"].size());
      }
      // The lexicon decoder keeps 28 readings of the sentence: more than one distinct text.
      CHECK(most >= 2);
      // Asking for alternatives changes no segment's own reading.
      REQUIRE(j["channels"][0]["segments"].size() == plain_segs.size());
      for (std::size_t i = 0; i < plain_segs.size(); ++i) CHECK(j["channels"][0]["segments"][i]["text"] == plain_segs[i]["text"]);
    }
    // The greedy decoder has one reading, all the probability it knows of.
    auto greedy = sluice_cli("transcribe " + model + "--decoder.mode=greedy --decoder.alternatives=3 --format json " + wav, tmp);
    REQUIRE(greedy.status == 0);
    const auto greedy_json = nlohmann::json::parse(greedy.out);
    for (const auto& seg : greedy_json["channels"][0]["segments"]) {
      check_alternatives(seg, 1);
      CHECK(seg["alternatives"][0]["confidence"].get<double>() == 1.0);
    }
    // More than the most is refused by the config check.
    auto many = sluice_cli("transcribe " + model + "--decoder.alternatives=21 " + wav, tmp);
    CHECK(many.status != 0);
    CHECK_MESSAGE(many.err.find("alternatives") != std::string::npos, many.err);
  }

  TEST_CASE("alternatives: a spoken card number never leaks through an alternative reading") {
    sluice::test::temp_dir tmp;
    const std::string wav = tmp.file("card.wav");
    REQUIRE(sluice::test::espeak("my card number is 4 1 1 1, 1 1 1 1, 1 1 1 1, 1 1 1 1.", wav, "en-us", 150));
    auto r = sluice_cli("transcribe " + model + "--decoder.alternatives=8 --format json " + wav, tmp);
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK_MESSAGE(card_leak(without_dir(r.out, tmp)).empty(), r.out);
    // Readings that differ only inside the card read alike once masked: one entry each.
    const auto masked = nlohmann::json::parse(r.out);
    std::size_t readings = 0;
    for (const auto& seg : masked["channels"][0]["segments"]) {
      check_alternatives(seg, 8);
      readings += seg["alternatives"].size();
    }
    CHECK(readings >= 1);
    // Control: with redaction off the alternatives carry the digits, so the check above can fail
    // on them: some reading other than a segment's first holds a spoken digit run.
    auto open = sluice_cli("transcribe " + model + "--postproc.redact=false --decoder.alternatives=8 --format json " + wav, tmp);
    REQUIRE(open.status == 0);
    bool leaked = false;
    const auto unmasked = nlohmann::json::parse(open.out);
    for (const auto& seg : unmasked["channels"][0]["segments"])
      for (std::size_t k = 1; k < seg["alternatives"].size(); ++k)
        leaked = leaked || !card_leak(seg["alternatives"][k]["text"].get<std::string>()).empty();
    CHECK_MESSAGE(leaked, open.out);
  }
}
