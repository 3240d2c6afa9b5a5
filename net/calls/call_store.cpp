#include "net/calls/call_store.hpp"

#include <filesystem>

#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include "net/calls/call_json.hpp"

namespace sluice::net::calls {

namespace {

using json = nlohmann::json;

// How long a statement waits for a lock held by another connection (a reader such as the
// sqlite3 shell) before failing (ms).
constexpr int busy_timeout_ms = 5000;

const char* const schema = R"sql(
CREATE TABLE IF NOT EXISTS calls (
  id TEXT PRIMARY KEY, tenant TEXT NOT NULL, source TEXT NOT NULL, external_id TEXT NOT NULL,
  labels TEXT NOT NULL, metadata TEXT NOT NULL, began_ms INTEGER NOT NULL,
  ended_ms INTEGER, end_reason TEXT, last_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS calls_began ON calls(began_ms);
CREATE TABLE IF NOT EXISTS finals (
  call_id TEXT NOT NULL, channel INTEGER NOT NULL, utterance INTEGER NOT NULL, start_ms INTEGER NOT NULL,
  end_ms INTEGER NOT NULL, text TEXT NOT NULL, words TEXT NOT NULL, error TEXT NOT NULL,
  display TEXT NOT NULL DEFAULT '{}');
CREATE INDEX IF NOT EXISTS finals_call ON finals(call_id);
CREATE TABLE IF NOT EXISTS events (
  call_id TEXT NOT NULL, type TEXT NOT NULL, channel INTEGER NOT NULL, at_ms INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS events_call ON events(call_id);
)sql";

int64_t epoch_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
std::chrono::system_clock::time_point from_ms(int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}
int64_t now_ms() { return epoch_ms(std::chrono::system_clock::now()); }

// One prepared statement, finalized when it goes out of scope.
class stmt {
 public:
  stmt(sqlite3* db, const char* sql) { ok_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) == SQLITE_OK; }
  ~stmt() { sqlite3_finalize(s_); }
  stmt(const stmt&) = delete;
  stmt& operator=(const stmt&) = delete;
  bool ok() const { return ok_; }
  stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  stmt& bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  // One step of a write: true when done.
  bool run() {
    const int rc = sqlite3_step(s_);
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
    return rc == SQLITE_DONE;
  }
  bool row() { return sqlite3_step(s_) == SQLITE_ROW; }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  std::string text(int c) const {
    const auto* p = sqlite3_column_text(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(s_, c)))
             : std::string();
  }
  int64_t integer(int c) const { return sqlite3_column_int64(s_, c); }
  bool null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }

 private:
  sqlite3_stmt* s_ = nullptr;
  bool ok_ = false;
};

// JSON text written by us; anything else (a hand-edited file) reads as `fallback`.
json parse_or(const std::string& text, json fallback) {
  auto j = json::parse(text, nullptr, false);
  return j.is_discarded() ? fallback : j;
}

std::vector<actors::word_event> words_from(const std::string& text) {
  std::vector<actors::word_event> out;
  const auto j = parse_or(text, json::array());
  if (!j.is_array()) return out;
  for (const auto& w : j) {
    if (!w.is_object()) continue;
    actors::word_event e;
    e.word = w.value("word", "");
    e.start_ms = w.value("start_ms", int64_t{0});
    e.end_ms = w.value("end_ms", int64_t{0});
    e.confidence = w.value("confidence", 0.0f);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

std::string call_store::path_of(const config::calls_config& cfg) {
  const std::filesystem::path file(cfg.store_file);
  return file.is_absolute() ? file.string() : (std::filesystem::path(cfg.data_dir) / file).string();
}

result<std::unique_ptr<call_store>> call_store::open(const std::string& path, std::size_t max_queued) {
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) return fail(errc::io, "calls store: cannot create the directory " + dir.string() + ": " + ec.message());
  std::unique_ptr<call_store> s(new call_store());
  s->path_ = path;
  s->max_queued_ = max_queued;
  if (sqlite3_open_v2(path.c_str(), &s->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string why = s->db_ ? sqlite3_errmsg(s->db_) : "out of memory";
    return fail(errc::io, "calls store: cannot open " + path + ": " + why);
  }
  sqlite3_busy_timeout(s->db_, busy_timeout_ms);
  // WAL: a commit is one append to the log, readers do not block it, and a killed process
  // loses at most the transaction it was writing. synchronous=NORMAL keeps every commit across
  // a process crash (only a power loss may lose the last ones).
  if (!s->exec("PRAGMA journal_mode=WAL;") || !s->exec("PRAGMA synchronous=NORMAL;") || !s->exec(schema))
    return fail(errc::io, "calls store: " + path + " is not usable: " + sqlite3_errmsg(s->db_));
  return s;
}

bool call_store::exec(const char* sql) {
  char* err = nullptr;
  const bool ok = sqlite3_exec(db_, sql, nullptr, nullptr, &err) == SQLITE_OK;
  if (!ok) spdlog::error("calls store {}: {}", path_, err ? err : "unknown error");
  sqlite3_free(err);
  return ok;
}

result<std::vector<call_record>> call_store::load_recent(std::size_t n) {
  // Calls the process did not end: their end is the last thing stored of them.
  {
    stmt mark(db_, "UPDATE calls SET ended_ms = last_ms, end_reason = ?1 WHERE ended_ms IS NULL");
    if (!mark.ok() || !mark.bind(1, std::string(interrupted_reason)).run())
      return fail(errc::io, std::string("calls store: cannot mark interrupted calls: ") + sqlite3_errmsg(db_));
    const int marked = sqlite3_changes(db_);
    if (marked > 0) spdlog::warn("calls store: {} call(s) were live when the process stopped: ended as interrupted", marked);
  }
  std::vector<call_record> out;
  stmt q(db_,
         "SELECT id, tenant, source, external_id, labels, metadata, began_ms, ended_ms, end_reason FROM calls "
         "ORDER BY began_ms DESC, rowid DESC LIMIT ?1");
  stmt fq(db_, "SELECT channel, utterance, start_ms, end_ms, text, words, error, display FROM finals WHERE call_id = ?1 ORDER BY rowid");
  stmt eq(db_, "SELECT type, channel, at_ms, data FROM events WHERE call_id = ?1 ORDER BY rowid");
  if (!q.ok() || !fq.ok() || !eq.ok()) return fail(errc::io, std::string("calls store: ") + sqlite3_errmsg(db_));
  q.bind(1, static_cast<int64_t>(std::min<std::size_t>(n, INT64_MAX)));
  while (q.row()) {
    call_record c;
    c.id = q.text(0);
    c.start.tenant = q.text(1);
    c.start.source = q.text(2);
    c.start.external_id = q.text(3);
    const auto labels = parse_or(q.text(4), json::array());
    if (labels.is_array())
      for (const auto& l : labels) c.start.channel_labels.push_back(l.is_string() ? l.get<std::string>() : "");
    c.start.metadata = parse_or(q.text(5), json::object());
    c.began = from_ms(q.integer(6));
    c.ended = from_ms(q.null(7) ? q.integer(6) : q.integer(7));
    c.live = false;
    c.end_reason = q.text(8);
    for (const auto& l : c.start.channel_labels) c.channels.push_back(channel_record{l, {}, {}});
    fq.bind(1, c.id);
    while (fq.row()) {
      const auto ch = fq.integer(0);
      if (ch < 0 || ch >= static_cast<int64_t>(c.channels.size())) continue;
      actors::transcript_event ev;
      ev.is_final = true;
      ev.channel = 0;
      ev.utterance = fq.integer(1);
      ev.start_ms = fq.integer(2);
      ev.end_ms = fq.integer(3);
      ev.text = fq.text(4);
      ev.words = words_from(fq.text(5));
      ev.error = fq.text(6);
      // The display form: {"text", "words", "redactions"} (written below).
      const auto display = parse_or(fq.text(7), json::object());
      if (display.is_object()) {
        ev.display_text = display.value("text", "");
        if (display.contains("words")) ev.display_words = words_from(display["words"].dump());
        for (const auto& r : display.value("redactions", json::array()))
          if (r.is_object())
            ev.redactions.push_back(
                {r.value("start_ms", int64_t{0}), r.value("end_ms", int64_t{0}), r.value("kind", std::string())});
      }
      c.channels[static_cast<std::size_t>(ch)].finals.push_back(std::move(ev));
    }
    fq.reset();
    eq.bind(1, c.id);
    while (eq.row()) {
      call_event e;
      e.type = eq.text(0);
      e.channel = static_cast<int>(eq.integer(1));
      e.at_ms = eq.integer(2);
      e.data = parse_or(eq.text(3), json::object());
      c.events.push_back(std::move(e));
    }
    eq.reset();
    out.push_back(std::move(c));
  }
  return out;
}

void call_store::attach(call_registry& reg) {
  if (sub_) return;
  subscription_filter f;
  f.kinds = static_cast<uint8_t>(update_kind::call_start) | static_cast<uint8_t>(update_kind::final) |
            static_cast<uint8_t>(update_kind::event) | static_cast<uint8_t>(update_kind::metadata) |
            static_cast<uint8_t>(update_kind::call_end);
  // The wake function holds the signal, not the store: a wake already on its way when the
  // store stops finds it still there.
  sub_ = reg.subscribe(f, max_queued_, overflow::drop_update, [sig = sig_] {
    {
      std::lock_guard lock(sig->mu);
      sig->woken = true;
    }
    sig->cv.notify_one();
  });
  thread_ = std::thread([this] { run(); });
}

void call_store::run() {
  for (;;) {
    uint64_t asked = 0;
    bool stopping = false;
    {
      std::unique_lock lock(sig_->mu);
      sig_->cv.wait(lock, [&] { return sig_->woken || sig_->stopping || sig_->flush_asked > sig_->flush_done; });
      sig_->woken = false;
      asked = sig_->flush_asked;
      stopping = sig_->stopping;
    }
    // Everything queued so far, in transactions of what was there at each take.
    for (auto batch = sub_->take(); !batch.empty(); batch = sub_->take()) write_batch(batch);
    if (const auto lost = sub_->lost(); lost > dropped_logged_ && (lost & (lost - 1)) == 0) {
      spdlog::warn("calls store: {} updates dropped so far: more than calls.store_queue = {} were waiting", lost,
                   max_queued_);
      dropped_logged_ = lost;
    }
    {
      std::lock_guard lock(sig_->mu);
      sig_->flush_done = asked;
    }
    sig_->cv.notify_all();
    if (stopping) return;
  }
}

void call_store::write_batch(const std::vector<call_update>& batch) {
  if (!exec("BEGIN")) {
    failed_ += batch.size();
    return;
  }
  stmt ins_call(db_,
                "INSERT OR REPLACE INTO calls (id, tenant, source, external_id, labels, metadata, began_ms, ended_ms, "
                "end_reason, last_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, NULL, ?7)");
  stmt ins_final(db_, "INSERT INTO finals (call_id, channel, utterance, start_ms, end_ms, text, words, error, display) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  stmt ins_event(db_, "INSERT INTO events (call_id, type, channel, at_ms, data) VALUES (?1, ?2, ?3, ?4, ?5)");
  stmt touch(db_, "UPDATE calls SET last_ms = ?2 WHERE id = ?1");
  stmt set_meta(db_, "UPDATE calls SET metadata = ?2 WHERE id = ?1");
  stmt end_call(db_, "UPDATE calls SET ended_ms = ?2, end_reason = ?3, last_ms = ?2 WHERE id = ?1");
  bool ok = ins_call.ok() && ins_final.ok() && ins_event.ok() && touch.ok() && set_meta.ok() && end_call.ok();
  for (const auto& u : batch) {
    if (!ok) break;
    switch (u.kind) {
      case update_kind::call_start:
        if (!u.call) break;
        ok = ins_call.bind(1, u.id)
                 .bind(2, u.call->start.tenant)
                 .bind(3, u.call->start.source)
                 .bind(4, u.call->start.external_id)
                 .bind(5, dump(json(u.call->start.channel_labels)))
                 .bind(6, dump(u.call->start.metadata))
                 .bind(7, epoch_ms(u.call->began))
                 .run();
        break;
      case update_kind::final: {
        json words = json::array();
        for (const auto& w : u.result.words) words.push_back(word_json(w));
        json display_words = json::array();
        for (const auto& w : u.result.display_words) display_words.push_back(word_json(w));
        json redactions = json::array();
        for (const auto& r : u.result.redactions)
          redactions.push_back({{"start_ms", r.start_ms}, {"end_ms", r.end_ms}, {"kind", r.kind}});
        const json display{{"text", u.result.display_text}, {"words", display_words}, {"redactions", redactions}};
        ok = ins_final.bind(1, u.id)
                 .bind(2, static_cast<int64_t>(u.channel))
                 .bind(3, u.result.utterance)
                 .bind(4, u.result.start_ms)
                 .bind(5, u.result.end_ms)
                 .bind(6, u.result.text)
                 .bind(7, dump(words))
                 .bind(8, u.result.error)
                 .bind(9, dump(display))
                 .run() &&
             touch.bind(1, u.id).bind(2, now_ms()).run();
        break;
      }
      case update_kind::event:
        if (!u.event) break;
        ok = ins_event.bind(1, u.id)
                 .bind(2, u.event->type)
                 .bind(3, static_cast<int64_t>(u.event->channel))
                 .bind(4, u.event->at_ms)
                 .bind(5, dump(u.event->data))
                 .run() &&
             touch.bind(1, u.id).bind(2, now_ms()).run();
        break;
      case update_kind::metadata: ok = set_meta.bind(1, u.id).bind(2, dump(u.metadata)).run(); break;
      case update_kind::call_end:
        if (!u.call) break;
        ok = end_call.bind(1, u.id).bind(2, epoch_ms(u.call->ended)).bind(3, u.call->end_reason).run();
        break;
      case update_kind::partial: break;
    }
  }
  if (ok && exec("COMMIT")) {
    written_ += batch.size();
    return;
  }
  spdlog::error("calls store {}: a write of {} updates failed: {}", path_, batch.size(), sqlite3_errmsg(db_));
  exec("ROLLBACK");
  failed_ += batch.size();
}

void call_store::flush() {
  if (!thread_.joinable()) return;
  std::unique_lock lock(sig_->mu);
  const uint64_t n = ++sig_->flush_asked;
  sig_->cv.notify_all();
  sig_->cv.wait(lock, [&] { return sig_->flush_done >= n; });
}

void call_store::stop() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(sig_->mu);
      sig_->stopping = true;
    }
    sig_->cv.notify_all();
    thread_.join();
  }
  if (sub_) sub_->cancel();
  if (db_) {
    sqlite3_close(db_);
    db_ = nullptr;
  }
}

call_store::counts call_store::stats() const {
  counts c;
  c.written = written_;
  c.failed = failed_;
  c.dropped = sub_ ? sub_->lost() : 0;
  return c;
}

call_store::~call_store() { stop(); }

}  // namespace sluice::net::calls
