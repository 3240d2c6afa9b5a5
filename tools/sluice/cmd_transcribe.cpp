// sluice transcribe FILE...: decode -> resample to 16 kHz -> optional denoise -> VAD slicing ->
// fbank -> acoustic model -> CTC decoder ([decoder] mode: by default the lexicon-constrained beam
// search over the LM's words when the model ships lm.arpa, else the plain prefix beam search;
// + hotwords) -> text/JSON/SRT/VTT, all through the actor engine: each channel of each file is an engine
// channel, batched together with all the others.

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include <caf/all.hpp>

#include "actors/cpu_affinity.hpp"
#include "actors/engine.hpp"
#include "actors/segment_feeder.hpp"
#include "dsp/file_speech.hpp"
#include "moe/acoustic_model.hpp"
#include "moe/decoder/context_graph.hpp"
#include "tools/sluice/cli.hpp"
#include "tools/sluice/transcript.hpp"

namespace sluice::cli {
namespace {

constexpr int64_t samples_per_ms = dsp::model_sample_rate / 1000;
constexpr double progress_min_duration_s = 60.0;  // shorter files finish before progress helps
constexpr float default_hotword_weight = 3.0f;
constexpr float max_hotword_weight = 100.0f;  // the context graph's limit
constexpr const char* lm_file_name = "lm.arpa";

struct transcribe_args {
  transcript_format format = transcript_format::text;
  transcript_form form = transcript_form::display;
  std::string hotwords_file;
  float hotword_weight = default_hotword_weight;
  bool use_lm = true;
  std::vector<std::string> labels;
  std::vector<std::string> files;
};

std::vector<std::string> split_labels(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) out.push_back(part);
  return out;
}

// Hotwords file: one phrase per line, optionally followed by a weight ("acme corp 4.5");
// blank lines and lines starting with '#' are skipped.
result<std::vector<moe::hotword>> read_hotwords(const std::string& path, float default_weight) {
  std::ifstream in(path);
  if (!in) return fail(errc::io, "cannot open hotwords file " + path);
  std::vector<moe::hotword> out;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    float weight = default_weight;
    auto sp = line.find_last_of(" \t");
    if (sp != std::string::npos) {
      char* end = nullptr;
      const std::string tail = line.substr(sp + 1);
      float w = std::strtof(tail.c_str(), &end);
      if (end && *end == '\0' && !tail.empty()) {
        if (!(w >= 0)) return fail(errc::invalid_argument, path + ":" + std::to_string(line_no) + ": weight must be >= 0");
        weight = w;
        line.resize(sp);
      }
    }
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    out.push_back({line, weight});
  }
  return out;
}

result<transcribe_args> parse_args(std::vector<std::string> args) {
  transcribe_args out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> result<std::string> {
      if (i + 1 >= args.size()) return fail(errc::invalid_argument, a + " needs a value");
      return args[++i];
    };
    if (a == "--format") {
      auto v = value();
      if (!v) return tl::unexpected(v.error());
      if (!parse_transcript_format(*v, out.format))
        return fail(errc::invalid_argument, "--format " + *v + ": choose text, json, srt or vtt");
    } else if (a == "--hotwords") {
      auto v = value();
      if (!v) return tl::unexpected(v.error());
      out.hotwords_file = *v;
    } else if (a == "--hotword-weight") {
      auto v = value();
      if (!v) return tl::unexpected(v.error());
      char* end = nullptr;
      out.hotword_weight = std::strtof(v->c_str(), &end);
      if (v->empty() || *end != '\0' || !(out.hotword_weight >= 0) || out.hotword_weight > max_hotword_weight)
        return fail(errc::invalid_argument, "--hotword-weight " + *v + ": give a number from 0 to " +
                                                std::to_string(static_cast<int>(max_hotword_weight)));
    } else if (a == "--labels") {
      auto v = value();
      if (!v) return tl::unexpected(v.error());
      out.labels = split_labels(*v);
    } else if (a == "--lexical") {
      out.form = transcript_form::lexical;
    } else if (a == "--no-lm") {
      out.use_lm = false;
    } else if (a.rfind("--", 0) == 0) {
      return fail(errc::invalid_argument, "unknown option " + a);
    } else {
      out.files.push_back(a);
    }
  }
  if (out.files.empty()) return fail(errc::invalid_argument, "give one or more audio files");
  return out;
}


// The files of one run, each channel a channel of the actor engine: all files' channels go
// through the same lanes, so an archive is batched as live calls are. A file opens when its
// channels fit beside those open within [engine] offline_channels (and max_channels), or when
// none are open; the next files' channels open as others drain.
struct file_job {
  std::string path;
  dsp::file_speech speech;
  file_transcript transcript;
  std::size_t open_channels = 0;
  double done_s = 0;  // audio seconds with a final
};

struct channel_slot {
  std::size_t file = 0;
  std::size_t channel = 0;
};

// The file front end (decode and resample) of the next files, on a few threads that live for the
// whole run. A thread per file (std::async, until 2026-12-06) made glibc hand each new thread one
// of its arenas in turn, and each arena grew its own heap to a file's size once: counted with
// `perf record -e page-faults` on one core and 64 copies of the bundled call, 40% of the faults
// it recorded were the resampler writing its output into such fresh pages (a fault costs several
// microseconds on a VM). Threads that stay reuse their arena's freed buffers: the run's faults
// fell from 51k to 35k (`/usr/bin/time`), its peak memory from 215 to 150 MB.
class file_preparer {
 public:
  file_preparer(const config::sluice_config& cfg, std::size_t threads) : cfg_(cfg) {
    for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }
  ~file_preparer() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  file_preparer(const file_preparer&) = delete;
  file_preparer& operator=(const file_preparer&) = delete;

  /// Decodes and resamples `path` on one of the threads, in the order asked.
  std::future<result<dsp::file_speech>> prepare(std::string path) {
    std::promise<result<dsp::file_speech>> done;
    auto f = done.get_future();
    {
      std::lock_guard lock(mu_);
      queue_.push_back({std::move(path), std::move(done)});
    }
    wake_.notify_one();
    return f;
  }

 private:
  struct job {
    std::string path;
    std::promise<result<dsp::file_speech>> done;
  };

  void work() {
    actors::name_current_thread("sluice-prepare");
    for (;;) {
      job j;
      {
        std::unique_lock lock(mu_);
        wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (stop_) return;  // files still queued are not wanted any more
        j = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        // Decoding and resampling only: the VAD and slicing run beside recognition (feed_segments).
        j.done.set_value(dsp::prepare_file(j.path, cfg_, dsp::front_end::samples));
      } catch (...) {  // out of memory: the file fails, the run goes on
        j.done.set_exception(std::current_exception());
      }
    }
  }

  const config::sluice_config& cfg_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<job> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

int run_files(const config::sluice_config& cfg, const transcribe_args& args, const std::vector<std::string>& hotwords) {
  // The file front end (decode, resample) of the next files runs on their own threads, one per
  // core ahead, instead of file after file on this thread: measured (perf, 16 copies of the
  // bundled call) this thread took 39% of the run's CPU samples, most of it this front end, one
  // file at a time. The first files are prepared while the model and LM load.
  const std::size_t lookahead = std::max(1u, std::thread::hardware_concurrency());
  file_preparer preparer(cfg, std::min(lookahead, args.files.size()));
  std::deque<std::future<result<dsp::file_speech>>> preparing;
  std::size_t next_prepare = 0;
  auto prepare_ahead = [&]() {
    while (next_prepare < args.files.size() && preparing.size() < lookahead)
      preparing.push_back(preparer.prepare(args.files[next_prepare++]));
  };
  prepare_ahead();
  auto res = actors::engine_resources::load(cfg, args.use_lm);
  if (!res) {
    std::fprintf(stderr, "sluice transcribe: %s\n", res.error().message.c_str());
    return exit_failure;
  }
  if ((*res)->lm) spdlog::info("word LM: order {}", (*res)->lm->order());
  spdlog::info("decoder: {}{}", moe::to_string((*res)->decoder_mode),
               (*res)->lexicon ? " (" + std::to_string((*res)->lexicon->words()) + " words)" : std::string());
  auto eng = actors::engine::start(*res);
  caf::scoped_actor self{eng->system()};
  int status = exit_ok;
  std::vector<file_job> jobs;
  std::map<actors::channel_id, channel_slot> slots;
  std::size_t next_file = 0, finished = 0;
  // Files are opened a few channels at a time (engine.offline_channels), not all at once: each
  // open file holds its decoded audio, a channel thread and a feeder thread (measured: see
  // engine_config.hpp).
  const int window = cfg.engine.offline_channels > 0 ? cfg.engine.offline_channels : 4 * std::max(1, eng->lanes());
  const std::size_t max_open = static_cast<std::size_t>(std::min(window, cfg.engine.max_channels));
  spdlog::info("files: opened while their channels fit in {} open at once", max_open);

  // The next file, prepared but not opened yet (it did not fit beside the open channels).
  std::optional<result<dsp::file_speech>> next_speech;
  // Opens the next files' channels while they fit: a file is opened whole or not yet, so no
  // channel of it is refused for want of room (one larger than the limit opens alone).
  auto open_more = [&]() {
    while (next_file < args.files.size()) {
      if (!next_speech) {
        prepare_ahead();
        try {
          next_speech.emplace(preparing.front().get());
        } catch (const std::exception& e) {
          next_speech.emplace(fail(errc::internal, std::string("preparing the audio: ") + e.what()));
        }
        preparing.pop_front();
        prepare_ahead();
      }
      if (*next_speech && !slots.empty() && slots.size() + (*next_speech)->channels.size() > max_open) return;
      const auto& path = args.files[next_file++];
      auto speech = std::move(*next_speech);
      next_speech.reset();
      if (!speech) {
        std::fprintf(stderr, "sluice transcribe: %s: %s (%s)\n", path.c_str(), speech.error().message.c_str(),
                     to_string(speech.error().code));
        status = exit_failure;
        ++finished;
        continue;
      }
      const std::size_t f = jobs.size();
      jobs.push_back({path, std::move(*speech), {path, 0, 0, {}}, 0, 0});
      auto& job = jobs.back();
      job.transcript.duration_s = job.speech.duration_s;
      job.transcript.input_sample_rate = job.speech.input_sample_rate;
      const auto n_ch = job.speech.channels.size();
      for (std::size_t ch = 0; ch < n_ch; ++ch) {
        channel_transcript ct{static_cast<int>(ch), "", {}};
        if (ch < args.labels.size()) ct.label = args.labels[ch];
        else if (n_ch == 2) ct.label = ch == 0 ? "agent" : "customer";
        else if (n_ch > 2) ct.label = "channel " + std::to_string(ch);
        job.transcript.channels.push_back(std::move(ct));
        actors::channel_request req;
        req.label = job.transcript.channels.back().label;
        req.hotwords = hotwords;
        req.partials = false;
        req.offline = true;
        auto r = eng->open(req, caf::actor_cast<caf::actor>(self));
        if (!r.ok) {
          std::fprintf(stderr, "sluice transcribe: %s: %s\n", path.c_str(), r.reason.c_str());
          status = exit_failure;
          continue;
        }
        slots[r.channel] = {f, ch};
        ++job.open_channels;
        // Its segments go out as the VAD finds them, the channel's end after the last.
        auto fed = actors::feed_segments(eng->system(), r.handle, std::move(job.speech.channels[ch].samples), cfg.vad,
                                         cfg.segment, cfg.engine.offline_nice);
        if (!fed) {
          std::fprintf(stderr, "sluice transcribe: %s: %s\n", path.c_str(), fed.error().message.c_str());
          status = exit_failure;
          self->send(r.handle, actors::end_atom::value);  // the channel ends with nothing to recognise
        }
      }
      if (job.open_channels == 0) ++finished;
      spdlog::debug("{}: opened, {} channels open", path, slots.size());
    }
  };

  std::map<actors::channel_id, std::vector<actors::transcript_event>> finals;
  auto finish_file = [&](file_job& job) {
    for (auto& ct : job.transcript.channels) std::sort(ct.segments.begin(), ct.segments.end(),
                                                       [](const auto& a, const auto& b) { return a.start_ms < b.start_ms; });
    if (job.speech.duration_s >= progress_min_duration_s) std::fputc('\n', stderr);
    std::fputs(render(job.transcript, args.format, args.form).c_str(), stdout);
    std::fflush(stdout);
    job.speech = {};
  };
  // Output follows the order of the files on the command line.
  std::size_t printed = 0;
  std::vector<uint8_t> file_done;
  open_more();
  while (finished < args.files.size()) {
    bool timed_out = false;
    self->receive(
        [&](actors::transcript_event& ev) {
          auto it = slots.find(ev.channel);
          if (it == slots.end()) return;
          auto& job = jobs[it->second.file];
          if (!ev.error.empty()) {
            std::fprintf(stderr, "sluice transcribe: %s: channel %zu: %s\n", job.path.c_str(), it->second.channel,
                         ev.error.c_str());
            status = exit_failure;
            return;
          }
          if (!ev.is_final) return;
          job.done_s += static_cast<double>(ev.end_ms - ev.start_ms) / 1000.0;
          if (job.speech.duration_s >= progress_min_duration_s)
            std::fprintf(stderr, "\r%s: %.1f / %.1f s", job.path.c_str(), std::min(job.done_s, job.speech.duration_s),
                         job.speech.duration_s * static_cast<double>(job.speech.channels.size()));
          if (ev.text.empty()) return;
          transcript_segment seg{ev.start_ms, ev.end_ms, ev.text, {}, ev.display_text, {}, {}};
          for (const auto& w : ev.words) seg.words.push_back({w.word, w.start_ms, w.end_ms, w.confidence});
          for (const auto& w : ev.display_words)
            seg.display_words.push_back({w.word, w.start_ms, w.end_ms, w.confidence});
          for (const auto& r : ev.redactions) seg.redactions.push_back({r.start_ms, r.end_ms, r.kind});
          for (const auto& a : ev.alternatives) {
            transcript_alternative alt{a.text, a.display_text, a.confidence, {}};
            for (const auto& w : a.words) alt.words.push_back({w.word, w.start_ms, w.end_ms, w.confidence});
            seg.alternatives.push_back(std::move(alt));
          }
          job.transcript.channels[it->second.channel].segments.push_back(std::move(seg));
        },
        [&](actors::drained_atom, actors::channel_id id) {
          auto it = slots.find(id);
          if (it == slots.end()) return;
          auto& job = jobs[it->second.file];
          slots.erase(it);
          if (--job.open_channels == 0) ++finished;
        },
        caf::after(std::chrono::seconds(600)) >> [&] { timed_out = true; });
    if (timed_out) {
      std::fprintf(stderr, "sluice transcribe: the engine stopped answering\n");
      return exit_failure;
    }
    file_done.assign(jobs.size(), 0);
    for (std::size_t f = 0; f < jobs.size(); ++f) file_done[f] = jobs[f].open_channels == 0;
    while (printed < jobs.size() && file_done[printed]) finish_file(jobs[printed++]);
    open_more();
  }
  while (printed < jobs.size()) finish_file(jobs[printed++]);
  eng->shutdown();
  return status;
}

}  // namespace

int cmd_transcribe(invocation& inv) {
  auto args = parse_args(inv.args);
  if (!args) {
    std::fprintf(stderr, "sluice transcribe: %s\n", args.error().message.c_str());
    return exit_usage;
  }
  std::vector<std::string> hotwords;
  if (!args->hotwords_file.empty()) {
    auto hw = read_hotwords(args->hotwords_file, args->hotword_weight);
    if (!hw) {
      std::fprintf(stderr, "sluice transcribe: %s\n", hw.error().message.c_str());
      return exit_failure;
    }
    for (const auto& h : *hw) hotwords.push_back(h.phrase + " " + std::to_string(h.weight));
  }
  return run_files(inv.cfg, *args, hotwords);
}

}  // namespace sluice::cli
