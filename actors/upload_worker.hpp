#pragma once
/// The inside of upload_queue: what its dispatcher and workers exchange. Not for other callers.

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>

#include <caf/all.hpp>

#include "actors/upload_queue.hpp"
#include "dsp/audio_file.hpp"
#include "dsp/pcm.hpp"

namespace sluice::actors {

struct upload_queue::shared {
  std::atomic<int> in_flight{0};
  std::function<void()> before_decode;  ///< tests only; set before the first upload
};

/// An upload whose headers passed: what the worker needs to decode it within its limits.
struct upload_work {
  upload_request req;
  std::optional<dsp::raw_format> raw;
  dsp::audio_info info;                ///< from the headers
  std::size_t max_input_frames = 0;    ///< decoding budget per channel at info.sample_rate
  const char* budget_key = "upload.max_seconds";  ///< the config key that set the budget
};
using upload_work_ptr = std::shared_ptr<upload_work>;

using upload_idle_atom = caf::atom_constant<caf::atom("upidle")>;    ///< worker -> dispatcher: free
using upload_release_atom = caf::atom_constant<caf::atom("uprelease")>;  ///< channels given back

/// A worker (spawned detached): decodes, cuts and starts the transcription of each upload_work
/// it gets, then tells `dispatcher` it is free.
caf::behavior upload_worker(caf::event_based_actor* self, caf::actor dispatcher, supervisor_actor_type supervisor,
                            std::shared_ptr<upload_queue::shared> sh, config::sluice_config cfg);

/// {"error": why} and, for a refusal over a configured limit, {"limit": "section.key"}.
std::string upload_error_json(const std::string& why, const char* limit_key = nullptr);

}  // namespace sluice::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(sluice::actors::upload_work_ptr)
