#include "actors/file_job.hpp"

#include <algorithm>
#include <map>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/messages.hpp"
#include "actors/segment_feeder.hpp"

namespace sluice::actors {

namespace {

using json = nlohmann::json;

struct job {
  dsp::file_speech speech;  // its channels' 16 kHz samples, not yet sliced
  config::vad_config vad;
  config::segment_config segment;
  int nice = 0;  // the feeders' ([engine] offline_nice)
  std::function<void(upload_reply)> done;
  int retry_after_s = 0;
  std::string tenant;
  std::vector<std::string> hotwords;  // every channel's
  upload_observer observer;
  std::map<channel_id, std::size_t> channel_of;
  std::vector<std::vector<transcript_event>> finals;
  std::vector<std::string> errors;
  std::size_t drained = 0, opened = 0;
};

std::string error_json(const std::string& why) {
  return json{{"error", why}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

json words_json(const std::vector<word_event>& words) {
  json out = json::array();
  for (const auto& w : words)
    out.push_back({{"word", w.word}, {"start_ms", w.start_ms}, {"end_ms", w.end_ms}, {"confidence", w.confidence}});
  return out;
}

void finish(job& j) {
  json channels = json::array();
  const auto n = j.speech.channels.size();
  for (std::size_t c = 0; c < n; ++c) {
    auto& evs = j.finals[c];
    std::sort(evs.begin(), evs.end(), [](const auto& a, const auto& b) { return a.start_ms < b.start_ms; });
    json segs = json::array();
    for (const auto& ev : evs) {
      if (ev.text.empty()) continue;
      // The display form beside the words as spoken, as `sluice transcribe --format json` gives it.
      segs.push_back({{"start_ms", ev.start_ms},
                      {"end_ms", ev.end_ms},
                      {"text", ev.text},
                      {"words", words_json(ev.words)},
                      {"display_text", ev.display_text},
                      {"display_words", words_json(ev.display_words)}});
    }
    // The reply has always left a mono file's channel unlabelled.
    const std::string label = n == 1 ? "" : upload_channel_label(c, n);
    channels.push_back({{"channel", c}, {"label", label}, {"segments", segs}});
  }
  json out{{"duration_s", j.speech.duration_s}, {"sample_rate", j.speech.input_sample_rate}, {"channels", channels}};
  if (!j.errors.empty()) out["errors"] = j.errors;
  j.done({200, out.dump(-1, ' ', false, json::error_handler_t::replace), 0});
}

caf::behavior job_actor(caf::event_based_actor* self, std::shared_ptr<job> j, supervisor_actor_type supervisor) {
  if (j->observer.started) {
    std::vector<std::string> labels;
    const auto n = j->speech.channels.size();
    for (std::size_t c = 0; c < n; ++c) labels.push_back(upload_channel_label(c, n));
    j->observer.started(labels);
  }
  // Open every channel, then send its segments; results come back to this actor.
  for (std::size_t c = 0; c < j->speech.channels.size(); ++c) {
    channel_request req;
    req.partials = false;
    req.offline = true;
    req.tenant = j->tenant;
    req.hotwords = j->hotwords;
    self->request(supervisor, std::chrono::seconds(10), open_atom::value, req, caf::actor_cast<caf::actor>(self))
        .then(
            [=](open_reply& r) {
              if (!r.ok) {
                j->errors.push_back(r.reason);
                if (++j->drained == j->speech.channels.size()) {
                  // The status comes from the refusal's code: 503 + Retry-After only when
                  // retrying may help; a request the engine cannot take is a 400.
                  const int status = http_status(r.code);
                  j->done({status, error_json(r.reason), status == 503 ? j->retry_after_s : 0});
                  self->quit();
                }
                return;
              }
              j->channel_of[r.channel] = c;
              // The feeder takes the channel's samples over and sends its segments as the VAD
              // finds them, then the end (feed_segments): the job holds no samples of its own.
              auto fed = feed_segments(self->system(), r.handle, std::move(j->speech.channels[c].samples), j->vad,
                                       j->segment, j->nice);
              if (!fed) {
                j->errors.push_back(fed.error().message);
                self->send(r.handle, end_atom::value);
              }
            },
            [=](caf::error& e) {
              j->done({503, error_json("the engine did not answer: " + self->system().render(e)), j->retry_after_s});
              self->quit();
            });
  }
  return {
      [=](transcript_event& ev) {
        auto it = j->channel_of.find(ev.channel);
        if (it == j->channel_of.end()) return;
        if (!ev.error.empty()) j->errors.push_back(ev.error);
        else if (ev.is_final) j->finals[it->second].push_back(ev);
        if ((ev.is_final || !ev.error.empty()) && j->observer.result) j->observer.result(it->second, ev);
      },
      [=](drained_atom, channel_id) {
        if (++j->drained == j->speech.channels.size()) {
          finish(*j);
          self->quit();
        }
      },
  };
}

}  // namespace

std::string upload_channel_label(std::size_t c, std::size_t n) {
  if (n == 1) return "mono";
  if (n == 2) return c == 0 ? "agent" : "customer";
  return "channel " + std::to_string(c);
}

void start_transcription(caf::actor_system& sys, const supervisor_actor_type& supervisor, dsp::file_speech speech,
                         const config::sluice_config& cfg, std::function<void(upload_reply)> done, int retry_after_s,
                         std::string tenant, upload_observer observer, std::vector<std::string> hotwords) {
  auto j = std::make_shared<job>();
  j->speech = std::move(speech);
  j->vad = cfg.vad;
  j->segment = cfg.segment;
  j->nice = cfg.engine.offline_nice;
  j->done = std::move(done);
  j->retry_after_s = retry_after_s;
  j->tenant = std::move(tenant);
  j->observer = std::move(observer);
  j->hotwords = std::move(hotwords);
  j->finals.resize(j->speech.channels.size());
  sys.spawn(job_actor, j, supervisor);
}

}  // namespace sluice::actors
