#include "net/calls/upload_call.hpp"

namespace sluice::net::calls {

namespace {

constexpr int status_ok = 200;

// What the observer and the done wrapper share. `started` and the results come from the job's
// actor, `done` from it or (a refusal at the door) from the submitting thread: hence the lock.
struct upload_call {
  std::shared_ptr<call_registry> reg;
  std::string tenant, client;
  std::mutex mu;
  std::optional<call_id> id;
};

}  // namespace

void follow_upload(const std::shared_ptr<call_registry>& reg, actors::upload_request& req) {
  auto c = std::make_shared<upload_call>();
  c->reg = reg;
  c->tenant = req.tenant;
  c->client = req.client;
  req.observer.started = [c](const std::vector<std::string>& labels) {
    call_start s;
    s.source = "upload";
    s.tenant = c->tenant;
    s.channel_labels = labels;
    s.metadata = nlohmann::json{{"client", c->client}};
    auto id = c->reg->begin(std::move(s));
    std::lock_guard lock(c->mu);
    c->id = std::move(id);
  };
  req.observer.result = [c](std::size_t channel, const actors::transcript_event& ev) {
    std::optional<call_id> id;
    {
      std::lock_guard lock(c->mu);
      id = c->id;
    }
    if (id) c->reg->result(*id, static_cast<int>(channel), ev);
  };
  req.done = [c, done = std::move(req.done)](actors::upload_reply r) {
    std::optional<call_id> id;
    {
      std::lock_guard lock(c->mu);
      id = c->id;
    }
    // Ended before the client hears: a client that lists calls after its answer finds it ended.
    if (id) c->reg->end(*id, r.status == status_ok ? "completed" : "error: HTTP " + std::to_string(r.status));
    if (id) r.call_id = *id;
    done(std::move(r));
  };
}

}  // namespace sluice::net::calls
