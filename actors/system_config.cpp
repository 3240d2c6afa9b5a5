#include "actors/system_config.hpp"

#include <chrono>

namespace sluice::actors {

engine_system_config::engine_system_config(int threads, int poll_sleep_us) {
  add_message_type<feature_chunk>("sluice.feature_chunk");
  add_message_type<logits_chunk>("sluice.logits_chunk");
  add_message_type<word_event>("sluice.word_event");
  add_message_type<alternative_event>("sluice.alternative_event");
  add_message_type<redaction_span>("sluice.redaction_span");
  add_message_type<transcript_event>("sluice.transcript_event");
  add_message_type<block_msg>("sluice.block_msg");
  add_message_type<reply_msg>("sluice.reply_msg");
  add_message_type<actor_report>("sluice.actor_report");
  add_message_type<open_reply>("sluice.open_reply");
  add_message_type<channel_request>("sluice.channel_request");
  add_message_type<std::vector<float>>("sluice.f32_vector");
  add_message_type<std::vector<uint8_t>>("sluice.u8_vector");
  add_message_type<std::vector<caf::actor>>("sluice.actor_vector");
  if (threads > 0) set("scheduler.max-threads", static_cast<size_t>(threads));
  if (poll_sleep_us >= 0) {
    set("work-stealing.moderate-sleep-duration", caf::timespan{std::chrono::microseconds{poll_sleep_us}});
  }
  // The engine logs through spdlog; CAF's own log file stays off.
  set("logger.file-verbosity", caf::atom("quiet"));
  set("logger.console-verbosity", caf::atom("quiet"));
}

}  // namespace sluice::actors
