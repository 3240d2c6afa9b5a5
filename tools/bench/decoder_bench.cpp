// decoder_bench: what the CTC decoders cost next to the acoustic model, on real audio.
//
//   decoder_bench [--model DIR] [--audio WAV] [--repeats R] [--config FILE] [--only ROW]
//
// The audio's VAD segments (every channel, as `sluice transcribe` cuts them) go through the model
// once per repeat (forward_offline, one thread): model seconds per second of audio. Their logits
// then go through each decoder (greedy, beam, lexicon) the way the channel actor feeds them: one
// model chunk (chunk_frames) at a time with a partial result after each, and a final at the end:
// decoder seconds per second of audio and its share of the model's. Min and median of R repeats.
//
// A fourth row, "lexicon-full", runs the lexicon decoder with its exact extension skipping off
// (lexicon_decoder::set_skip_hopeless(false)): the same text is required (the bench fails
// otherwise) and the two rows' times show what skipping saves. The model's forward and the rows
// take turns within each repeat, so a slow moment of the machine hits all of them alike.
//
// --only ROW (greedy, beam, lexicon, lex-full) runs that row alone, R times, and prints its times:
// for profiling one decoder (perf record ... decoder_bench --only lexicon).
//
// Also, from the same streaming run: partial stability (of the words a partial shows, how many
// differ in the next partial or the final; also without each partial's last word, which is still
// being spoken), the per-stream decoder memory (lexicon decoder, largest over the utterances) next
// to the shared vocabulary's, and each decoder's text of the whole file.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "actors/engine_resources.hpp"
#include "config/sluice_config.hpp"
#include "dsp/file_speech.hpp"
#include "moe/decoder/ctc_decoder.hpp"
#include "moe/decoder/lexicon_decoder.hpp"
#include "moe/forward.hpp"

using namespace sluice;
using clk = std::chrono::steady_clock;

namespace {

struct segment_logits {
  std::vector<float> logits;  // f32 [n_frames, vocab]
  int32_t n_frames = 0;
};

struct stability {
  int64_t shown = 0, changed = 0;            // every word of every partial
  int64_t shown_settled = 0, changed_settled = 0;  // all but each partial's last word
};

struct decode_run {
  double seconds = 0;
  std::string text;
  stability stab;
  std::size_t peak_bytes = 0;
  int64_t skipped = 0;  // lexicon: extensions not made (lexicon_decoder::skipped_extensions)
  int64_t lm_questions = 0;  // lexicon: questions sent to the LM (lexicon_decoder::lm_questions)
  int64_t aligned_rows = 0;  // lexicon: alignment rows computed (lexicon_decoder::aligned_rows)
  int64_t aligned_frames = 0;  // the frames of every result aligned: the rows if each were aligned afresh
};

double seconds_since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<std::string> words_of(const moe::decode_result& r) {
  std::vector<std::string> out;
  for (const auto& w : r.words) out.push_back(w.word);
  return out;
}

// Counts, for one partial `now` and the result after it, the shown words that changed.
void count_changes(const std::vector<std::string>& now, const std::vector<std::string>& after, stability& s) {
  for (std::size_t i = 0; i < now.size(); ++i) {
    const bool changed = i >= after.size() || after[i] != now[i];
    ++s.shown;
    s.changed += changed;
    if (i + 1 < now.size()) {
      ++s.shown_settled;
      s.changed_settled += changed;
    }
  }
}

// One decoder over every segment, fed the way the channel actor feeds it. `make()` returns a new
// decoder for each (ctc_decoder or lexicon_decoder: both accept / partial / finalize).
template <class Make>
decode_run run_segments(const std::vector<segment_logits>& segs, std::size_t vocab, int32_t chunk, Make make) {
  decode_run out;
  std::vector<std::vector<std::string>> partials;
  const auto t0 = clk::now();
  for (const auto& s : segs) {
    auto dec = make();
    if (!dec) {
      std::fprintf(stderr, "%s\n", dec.error().message.c_str());
      std::exit(1);
    }
    partials.clear();
    for (int32_t f = 0; f < s.n_frames; f += chunk) {
      const int32_t k = std::min(chunk, s.n_frames - f);
      (void)dec->accept(std::span<const float>(s.logits).subspan(f * vocab, k * vocab), k);
      partials.push_back(words_of(dec->partial()));
      out.aligned_frames += dec->frames();
    }
    out.aligned_frames += dec->frames();
    const auto final_result = dec->finalize();
    partials.push_back(words_of(final_result));
    for (std::size_t i = 0; i + 1 < partials.size(); ++i) count_changes(partials[i], partials[i + 1], out.stab);
    if (!final_result.text.empty()) out.text += (out.text.empty() ? "" : " ") + final_result.text;
    if constexpr (requires { dec->skipped_extensions(); }) out.skipped += dec->skipped_extensions();
    if constexpr (requires { dec->lm_questions(); }) out.lm_questions += dec->lm_questions();
    if constexpr (requires { dec->aligned_rows(); }) out.aligned_rows += dec->aligned_rows();
  }
  out.seconds = seconds_since(t0);
  return out;
}

// The lexicon decoder's memory, outside any timing: its size at each utterance's end (its largest
// point: frames, label trie and alignment rows grow until finalize()), largest over the utterances.
std::size_t peak_bytes(const actors::engine_resources& res, const std::vector<segment_logits>& segs, bool skip) {
  const moe::lexicon_view view(res.lexicon.get(), nullptr);
  std::size_t peak = 0;
  for (const auto& s : segs) {
    auto dec = moe::lexicon_decoder::create(res.model->tokens(), res.decoder, view, res.lm.get());
    dec->set_skip_hopeless(skip);
    (void)dec->accept(s.logits, s.n_frames);
    (void)dec->partial();  // the alignment's rows, as a live stream holds them before its final
    peak = std::max(peak, dec->memory_bytes());
  }
  return peak;
}

// mode; full: the lexicon decoder with its extension skipping off.
decode_run run_decoder(moe::decoder_mode mode, bool full, const actors::engine_resources& res,
                       const std::vector<segment_logits>& segs, int32_t chunk) {
  const auto& tokens = res.model->tokens();
  const auto vocab = static_cast<std::size_t>(tokens.size());
  const moe::lexicon_view view(res.lexicon.get(), nullptr);
  decode_run out =
      mode != moe::decoder_mode::lexicon
          ? run_segments(segs, vocab, chunk,
                         [&] { return moe::ctc_decoder::create(mode, tokens, res.decoder, res.lm.get(), view); })
          : run_segments(segs, vocab, chunk, [&] {
              auto dec = moe::lexicon_decoder::create(tokens, res.decoder, view, res.lm.get());
              if (dec) dec->set_skip_hopeless(!full);
              return dec;
            });
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir = "models/default", audio = "tests/data/sample_call_8k_mulaw_stereo.wav", config_file, only;
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--model") model_dir = v;
    else if (a == "--audio") audio = v;
    else if (a == "--repeats") repeats = std::max(1, std::stoi(v));
    else if (a == "--config") config_file = v;
    else if (a == "--only") only = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  config::sluice_config cfg;
  if (!config_file.empty())
    if (auto ok = config::apply_toml_file(cfg, config_file); !ok) {
      std::fprintf(stderr, "%s\n", ok.error().message.c_str());
      return 1;
    }
  cfg.model.dir = model_dir;
  cfg.decoder.mode = "lexicon";  // builds the vocabulary; each decoder is then made by hand
  auto model = moe::load_model(model_dir);
  if (!model) return std::fprintf(stderr, "%s\n", model.error().message.c_str()), 1;
  auto res = actors::engine_resources::create(cfg, *model);
  if (!res) return std::fprintf(stderr, "%s\n", res.error().message.c_str()), 1;
  auto speech = dsp::prepare_file(audio, cfg);
  if (!speech) return std::fprintf(stderr, "%s\n", speech.error().message.c_str()), 1;

  std::vector<std::vector<float>> fbanks;
  double audio_s = 0;
  for (const auto& ch : speech->channels)
    for (const auto& seg : ch.segments) {
      const std::vector<float> x(ch.samples.begin() + seg.start_sample, ch.samples.begin() + seg.end_sample);
      fbanks.push_back((*res)->fbank->compute(x));
      audio_s += static_cast<double>(x.size()) / dsp::model_sample_rate;
    }
  const auto mels = static_cast<int64_t>((*res)->fbank->num_mels());
  std::vector<segment_logits> segs(fbanks.size());
  std::vector<double> model_s;
  moe::workspace ws;
  // The model's forward of every segment, timed; it leaves the logits in segs.
  auto run_model = [&]() -> bool {
    const auto t0 = clk::now();
    for (std::size_t i = 0; i < fbanks.size(); ++i) {
      auto fwd = moe::forward_offline(**model, fbanks[i].data(), static_cast<int64_t>(fbanks[i].size()) / mels, {}, &ws);
      if (!fwd) return std::fprintf(stderr, "%s\n", fwd.error().message.c_str()), false;
      segs[i] = {std::move(fwd->logits), static_cast<int32_t>(fwd->n_frames)};
    }
    model_s.push_back(seconds_since(t0));
    return true;
  };
  if (!run_model()) return 1;  // a warm-up, and the logits for the decoders
  model_s.clear();
  const int32_t chunk = (*model)->arch().chunk_frames;
  struct row {
    const char* name;
    moe::decoder_mode mode;
    bool full;
    std::vector<double> t;
    decode_run run;
  };
  std::vector<row> rows = {{"greedy", moe::decoder_mode::greedy, false, {}, {}},
                           {"beam", moe::decoder_mode::beam, false, {}, {}},
                           {"lexicon", moe::decoder_mode::lexicon, false, {}, {}},
                           {"lex-full", moe::decoder_mode::lexicon, true, {}, {}}};
  if (!only.empty()) {
    std::erase_if(rows, [&](const row& w) { return w.name != only; });
    if (rows.empty()) return std::fprintf(stderr, "--only: no row %s\n", only.c_str()), 2;
  }
  // The model and the rows take turns within each repeat, so a slow moment of the machine hits
  // the model's time and the decoders' alike.
  for (int r = 0; r < repeats; ++r) {
    if (!run_model()) return 1;
    for (auto& w : rows) {
      w.run = run_decoder(w.mode, w.full, **res, segs, chunk);
      w.t.push_back(w.run.seconds);
    }
  }
  const double model_min = *std::min_element(model_s.begin(), model_s.end()), model_med = median(model_s);
  std::printf("audio: %s, %.1f s of speech in %zu segments; model forward (1 thread): min %.4f, median %.4f s "
              "per audio s\n",
              audio.c_str(), audio_s, segs.size(), model_min / audio_s, model_med / audio_s);
  std::printf("vocabulary: %d words, %d trie nodes, %.1f MiB shared by all streams\n", (*res)->lexicon->words(),
              (*res)->lexicon->nodes(), static_cast<double>((*res)->lexicon->memory_bytes()) / (1 << 20));
  std::printf("\n%-8s %14s %14s %10s %10s %22s\n", "decoder", "min s/audio s", "med s/audio s", "min/model",
              "med/model", "partial words changed");
  for (const auto& w : rows) {
    const double mn = *std::min_element(w.t.begin(), w.t.end()), md = median(w.t);
    const auto& s = w.run.stab;
    std::printf("%-8s %14.5f %14.5f %9.1f%% %9.1f%% %7.1f%% (%.1f%% w/o last)\n", w.name, mn / audio_s, md / audio_s,
                100 * mn / model_min, 100 * md / model_med,
                100.0 * static_cast<double>(s.changed) / static_cast<double>(std::max<int64_t>(1, s.shown)),
                100.0 * static_cast<double>(s.changed_settled) /
                    static_cast<double>(std::max<int64_t>(1, s.shown_settled)));
  }
  if (!only.empty()) return 0;
  const auto& lex = rows[2].run;
  std::printf("\nlexicon: %lld extensions skipped, %lld LM questions asked per pass (lex-full: %lld); lex-full (no "
              "skipping) gives the same text: %s\n",
              static_cast<long long>(lex.skipped), static_cast<long long>(lex.lm_questions),
              static_cast<long long>(rows[3].run.lm_questions), lex.text == rows[3].run.text ? "yes" : "NO");
  if (lex.text != rows[3].run.text) return 1;
  std::printf("lexicon: the results' alignment computed %lld frame rows per pass (%lld if each were aligned afresh)\n",
              static_cast<long long>(lex.aligned_rows), static_cast<long long>(lex.aligned_frames));
  std::vector<decode_run> last = {rows[0].run, rows[1].run, rows[2].run};
  last.back().peak_bytes = peak_bytes(**res, segs, true);
  const std::size_t full_bytes = peak_bytes(**res, segs, false);
  std::printf("\nlexicon decoder, per stream: at most %.1f KiB (largest utterance end; frames + label trie + "
              "hypotheses + alignment rows; %.1f KiB without skipping), plus the request's hotword lexicon\n",
              static_cast<double>(last.back().peak_bytes) / 1024, static_cast<double>(full_bytes) / 1024);
  std::printf("partial words shown %lld (changed %lld), %lld not last (changed %lld) [lexicon]\n",
              static_cast<long long>(last.back().stab.shown), static_cast<long long>(last.back().stab.changed),
              static_cast<long long>(last.back().stab.shown_settled),
              static_cast<long long>(last.back().stab.changed_settled));
  for (std::size_t i = 0; i < last.size(); ++i)
    std::printf("\n[%s] %s\n", std::string(to_string(static_cast<moe::decoder_mode>(i))).c_str(), last[i].text.c_str());
  return 0;
}
