#pragma once
/// Calls kept in SQLite ([calls] store = true) so that they survive a restart.
///
/// The file is opened in WAL mode (readers never block the writer; a process killed mid-write
/// leaves the last committed transactions intact). Tables: calls (one row per call: who, when,
/// channel labels, metadata, end and reason), finals (one row per final of a channel, words as
/// JSON), events. Partials are not stored.
///
/// Writes: the store subscribes to the registry (call_start, final, event, metadata, call_end)
/// with a bounded queue and overflow::drop_update: when [calls] store_queue writes are already
/// waiting, a new one is dropped and counted (stats().dropped, a warning at every power of two)
/// rather than making the ingest wait. One thread of its own takes what is queued and writes it
/// in one transaction, again and again; a failed transaction is logged and counted, and the
/// store goes on with the next.
///
/// Start: load_recent() reads back the newest calls before attach(); a call the file still has
/// as live (the process died during it) is ended there and then, with reason "interrupted" and
/// the time of its last stored write as its end.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/calls_config.hpp"
#include "config/error.hpp"
#include "net/calls/call_registry.hpp"

struct sqlite3;

namespace sluice::net::calls {

/// The reason given to calls found live in the store at start.
inline constexpr const char* interrupted_reason = "interrupted";

class call_store {
 public:
  /// Opens (creating it and its directory) the SQLite file at `path`. errc::io when it cannot be
  /// opened or is not a database of ours.
  static result<std::unique_ptr<call_store>> open(const std::string& path, std::size_t max_queued);
  /// The path [calls] names: store_file, under data_dir unless absolute.
  static std::string path_of(const config::calls_config& cfg);
  ~call_store();
  call_store(const call_store&) = delete;
  call_store& operator=(const call_store&) = delete;

  /// The newest `n` calls (by the time they began), every one ended: those left live are ended
  /// in the file first ("interrupted"). Call before attach(), on one thread.
  result<std::vector<call_record>> load_recent(std::size_t n);

  /// Subscribes to `reg` and starts the writer thread. Once only.
  void attach(call_registry& reg);
  /// Blocks until every update queued before the call is written (tests, shutdown).
  void flush();
  /// Writes what is queued, then stops the thread (idempotent; the destructor calls it).
  void stop();

  struct counts {
    uint64_t written = 0;  ///< updates written
    uint64_t dropped = 0;  ///< updates dropped because the queue was full
    uint64_t failed = 0;   ///< updates lost to a failed transaction
  };
  counts stats() const;

 private:
  call_store() = default;
  void run();
  void write_batch(const std::vector<call_update>& batch);
  bool exec(const char* sql);

  sqlite3* db_ = nullptr;
  std::string path_;
  std::size_t max_queued_ = 0;
  std::shared_ptr<subscription> sub_;
  std::thread thread_;
  // What the writer thread waits on; shared with the subscription's wake function.
  struct signal {
    std::mutex mu;
    std::condition_variable cv;
    bool woken = false, stopping = false;
    uint64_t flush_asked = 0, flush_done = 0;
  };
  std::shared_ptr<signal> sig_ = std::make_shared<signal>();
  std::atomic<uint64_t> written_{0}, failed_{0};
  uint64_t dropped_logged_ = 0;
};

}  // namespace sluice::net::calls
