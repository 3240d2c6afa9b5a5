#pragma once
/// An upload (POST /v1/transcribe) as a call: source "upload", one channel per audio channel of
/// the file (labels from actors/file_job.hpp), metadata {"client": address}. The call begins when
/// the file is decoded (a refused or undecodable upload is never a call), gets each final, and
/// ends when the answer goes out: reason "completed" (200) or "error: HTTP <status>".

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "actors/upload_job.hpp"
#include "net/calls/call_registry.hpp"

namespace sluice::net::calls {

/// Sets `req.observer` and wraps `req.done` so that the upload is followed as a call of `reg`.
void follow_upload(const std::shared_ptr<call_registry>& reg, actors::upload_request& req);

}  // namespace sluice::net::calls
