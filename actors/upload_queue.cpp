#include "actors/upload_queue.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "actors/upload_worker.hpp"
#include "dsp/bounded_decode.hpp"

namespace sluice::actors {

namespace {

constexpr int status_bad_request = 400;
constexpr int status_too_large = 413;
constexpr int status_unsupported_media = 415;
constexpr int status_too_many = 429;
constexpr int status_unavailable = 503;

struct dispatcher_state {
  std::deque<upload_work_ptr> waiting;    // headers checked, channels reserved, not yet decoding
  std::vector<caf::actor> idle;           // workers free to take one
  std::map<std::string, int> client_channels;  // channels reserved by each client's uploads
  static inline const char* name = "upload_dispatcher";
};

std::optional<dsp::sample_encoding> parse_encoding(const std::string& name) {
  if (name == "pcm_s16le") return dsp::sample_encoding::pcm_s16le;
  if (name == "mulaw") return dsp::sample_encoding::mulaw;
  if (name == "alaw") return dsp::sample_encoding::alaw;
  if (name == "pcm_f32le") return dsp::sample_encoding::pcm_f32le;
  return std::nullopt;
}

std::string seconds_text(double s) {
  return std::to_string(static_cast<long long>(std::ceil(s))) + " s";
}

// Reads the headers and checks every limit that needs no decoding. Answers and returns false
// when the upload is refused; otherwise fills `w` for a worker.
bool admit(upload_work& w, const upload_limits& lim, std::map<std::string, int>& client_channels) {
  // Every refusal is logged with its client and status; the reason goes to the client.
  auto done = [&w](upload_reply r) {
    spdlog::info("upload: refused from {}: status {}", w.req.client, r.status);
    w.req.done(std::move(r));
  };
  if (w.req.raw) {
    auto enc = parse_encoding(w.req.raw->encoding);
    if (!enc) {
      done({status_bad_request,
            upload_error_json("encoding \"" + w.req.raw->encoding + "\": choose pcm_s16le, mulaw, alaw or pcm_f32le"), 0});
      return false;
    }
    w.raw = dsp::raw_format{*enc, w.req.raw->sample_rate, w.req.raw->channels};
  }
  const auto& body = w.req.body;
  auto info = dsp::probe_upload(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(body.data()), body.size()), w.raw);
  if (!info) {
    const errc c = info.error().code;
    done({c == errc::invalid_argument ? status_bad_request : status_unsupported_media, upload_error_json(info.error().message), 0});
    return false;
  }
  w.info = *info;
  const int channels = info->channels;
  if (info->duration_s > lim.max_seconds) {
    done({status_too_large,
          upload_error_json("the upload is " + seconds_text(info->duration_s) + " long; uploads are limited to " +
                                std::to_string(lim.max_seconds) + " s (upload.max_seconds)",
                            "upload.max_seconds"),
          0});
    return false;
  }
  if (channels > lim.channels_per_upload) {
    done({status_too_large,
          upload_error_json("the file has " + std::to_string(channels) + " channels; one upload may open at most " +
                                std::to_string(lim.channels_per_upload) +
                                " (upload.channel_share of engine.max_channels)",
                            "upload.channel_share"),
          0});
    return false;
  }
  if (info->duration_s * channels > lim.max_channel_seconds) {
    done({status_too_large,
          upload_error_json("the upload holds " + seconds_text(info->duration_s * channels) +
                                " of audio over its channels; uploads are limited to " +
                                std::to_string(lim.max_channel_seconds) + " s (upload.max_channel_seconds)",
                            "upload.max_channel_seconds"),
          0});
    return false;
  }
  int& held = client_channels[w.req.client];
  if (held + channels > lim.channels_per_client) {
    const int had = held;
    if (held == 0) client_channels.erase(w.req.client);
    done({status_too_many,
          upload_error_json("this client's uploads hold " + std::to_string(had) + " channels; with this file's " +
                                std::to_string(channels) + " they would pass the " +
                                std::to_string(lim.channels_per_client) +
                                " one client may hold (upload.client_channel_share of engine.max_channels)",
                            "upload.client_channel_share"),
          lim.retry_after_s});
    return false;
  }
  held += channels;
  // Decode no more than the limits allow, whatever the stream turns out to hold.
  const double per_channel_s = static_cast<double>(lim.max_channel_seconds) / channels;
  const double budget_s = std::min<double>(lim.max_seconds, per_channel_s);
  if (per_channel_s < lim.max_seconds) w.budget_key = "upload.max_channel_seconds";
  w.max_input_frames = static_cast<std::size_t>(budget_s * info->sample_rate);
  return true;
}

caf::behavior upload_dispatcher(caf::stateful_actor<dispatcher_state>* self, upload_limits lim, supervisor_actor_type supervisor,
                                std::shared_ptr<upload_queue::shared> sh, config::sluice_config cfg) {
  const auto me = caf::actor_cast<caf::actor>(self);
  for (int i = 0; i < lim.workers; ++i)
    self->state.idle.push_back(
        self->spawn<caf::detached + caf::linked>(upload_worker, me, supervisor, sh, cfg));
  auto dispatch = [self] {
    auto& st = self->state;
    while (!st.idle.empty() && !st.waiting.empty()) {
      self->send(st.idle.back(), std::move(st.waiting.front()));
      st.idle.pop_back();
      st.waiting.pop_front();
    }
  };
  return {
      [=](upload_work_ptr& w) {
        if (!admit(*w, lim, self->state.client_channels)) return;
        // The channels go back when the upload is answered, however it ends.
        auto done = std::move(w->req.done);
        auto once = std::make_shared<std::atomic<bool>>(false);
        w->req.done = [me, once, client = w->req.client, channels = w->info.channels, done](upload_reply r) {
          if (once->exchange(true)) return;
          caf::anon_send(me, upload_release_atom::value, client, channels);
          done(std::move(r));
        };
        self->state.waiting.push_back(std::move(w));
        dispatch();
      },
      [=](upload_idle_atom, caf::actor& worker) {
        self->state.idle.push_back(std::move(worker));
        dispatch();
      },
      [=](upload_release_atom, const std::string& client, int channels) {
        auto it = self->state.client_channels.find(client);
        if (it == self->state.client_channels.end()) return;
        it->second -= channels;
        if (it->second <= 0) self->state.client_channels.erase(it);
      },
  };
}

}  // namespace

upload_limits upload_limits::from(const config::sluice_config& cfg) {
  const auto& u = cfg.upload;
  const int engine_channels = cfg.engine.max_channels;
  upload_limits l;
  l.workers = u.workers;
  l.capacity = u.workers + u.queue_depth;
  l.channels_per_upload = std::max(1, static_cast<int>(std::floor(engine_channels * u.channel_share)));
  l.channels_per_client =
      std::max(l.channels_per_upload, static_cast<int>(std::floor(engine_channels * u.client_channel_share)));
  l.max_seconds = u.max_seconds;
  l.max_channel_seconds = u.max_channel_seconds;
  l.retry_after_s = u.retry_after_s;
  return l;
}

upload_queue::upload_queue(caf::actor_system& sys, supervisor_actor_type supervisor, const config::sluice_config& cfg)
    : limits_(upload_limits::from(cfg)), shared_(std::make_shared<shared>()) {
  dispatcher_ = sys.spawn<caf::detached>(upload_dispatcher, limits_, std::move(supervisor), shared_, cfg);
}

upload_queue::~upload_queue() { caf::anon_send_exit(dispatcher_, caf::exit_reason::user_shutdown); }

void upload_queue::submit(upload_request req) {
  // Count first, so two network threads cannot both take the last place.
  if (shared_->in_flight.fetch_add(1) >= limits_.capacity) {
    shared_->in_flight.fetch_sub(1);
    spdlog::info("upload: refused from {}: {} uploads held (upload.workers + upload.queue_depth)", req.client,
                 limits_.capacity);
    req.done({status_unavailable,
              upload_error_json("the upload queue is full: " + std::to_string(limits_.capacity) +
                                    " uploads are being handled (upload.workers + upload.queue_depth); retry later",
                                "upload.queue_depth"),
              limits_.retry_after_s});
    return;
  }
  auto w = std::make_shared<upload_work>();
  w->req = std::move(req);
  // Answered exactly once; the place is free before the client hears back.
  auto once = std::make_shared<std::atomic<bool>>(false);
  w->req.done = [sh = shared_, once, done = std::move(w->req.done)](upload_reply r) {
    if (once->exchange(true)) return;
    sh->in_flight.fetch_sub(1);
    done(std::move(r));
  };
  caf::anon_send(dispatcher_, std::move(w));
}

int upload_queue::in_flight() const { return shared_->in_flight.load(); }

void upload_queue::set_before_decode(std::function<void()> hook) { shared_->before_decode = std::move(hook); }

}  // namespace sluice::actors
