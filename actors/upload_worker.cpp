#include "actors/upload_worker.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/file_job.hpp"
#include "dsp/bounded_decode.hpp"
#include "dsp/file_speech.hpp"
#include "dsp/resampler.hpp"

namespace sluice::actors {

namespace {

constexpr int status_bad_request = 400;
constexpr int status_too_large = 413;
constexpr int status_unsupported_media = 415;
constexpr int status_unprocessable = 422;
constexpr int status_internal = 500;

int status_of(errc code) {
  switch (code) {
    case errc::invalid_argument: return status_bad_request;
    case errc::limit_exceeded: return status_too_large;
    case errc::internal: return status_internal;
    default: return status_unsupported_media;
  }
}

void run(upload_work& w, const supervisor_actor_type& supervisor, caf::actor_system& sys, const config::sluice_config& cfg) {
  auto& done = w.req.done;
  const auto& body = w.req.body;
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  if (w.req.observer.body) w.req.observer.body(body);
  auto quality = dsp::parse_resample_quality(cfg.audio.resample_quality);
  if (!quality) return done({status_internal, upload_error_json(quality.error().message), 0});
  auto decoded = dsp::decode_bounded(bytes, w.raw, w.max_input_frames, *quality);
  if (!decoded) {
    const bool limit = decoded.error().code == errc::limit_exceeded;
    return done({status_of(decoded.error().code),
                 upload_error_json(decoded.error().message, limit ? w.budget_key : nullptr), 0});
  }
  auto speech = dsp::prepare_audio(std::move(*decoded), cfg, dsp::front_end::samples);
  if (!speech) return done({status_unprocessable, upload_error_json(speech.error().message), 0});
  if (speech->channels.empty()) return done({status_unprocessable, upload_error_json("the file has no audio channels"), 0});
  speech->input_sample_rate = w.info.sample_rate;
  speech->duration_s = w.info.duration_s;
  start_transcription(sys, supervisor, std::move(*speech), cfg, std::move(done), cfg.upload.retry_after_s, w.req.tenant,
                      std::move(w.req.observer), std::move(w.req.hotwords));
}

}  // namespace

std::string upload_error_json(const std::string& why, const char* limit_key) {
  nlohmann::json j{{"error", why}};
  if (limit_key) j["limit"] = limit_key;
  // Replaced, not thrown on: a message may quote bytes of the upload that are not UTF-8.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

caf::behavior upload_worker(caf::event_based_actor* self, caf::actor dispatcher, supervisor_actor_type supervisor,
                            std::shared_ptr<upload_queue::shared> sh, config::sluice_config cfg) {
  return {
      [=](upload_work_ptr& w) {
        if (sh->before_decode) sh->before_decode();
        spdlog::debug("upload: decoding {} s x {} channels from {}", w->info.duration_s, w->info.channels, w->req.client);
        run(*w, supervisor, self->system(), cfg);
        // The body goes now; the decoded samples went to the transcription's feeders.
        w.reset();
        self->send(dispatcher, upload_idle_atom::value, caf::actor_cast<caf::actor>(self));
      },
  };
}

}  // namespace sluice::actors
