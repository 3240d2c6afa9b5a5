#include "moe/decoder/arpa_lm.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numbers>
#include <type_traits>

#include "config/cache_dir.hpp"
#include "config/mapped_file.hpp"

namespace sluice::moe {

namespace {

constexpr char binary_magic[8] = {'S', 'L', 'U', 'I', 'C', 'E', 'L', 'M'};
// 2 (2026-12-06): the n-gram index's hash table is written too, and entries and index are 8-byte
// aligned so a mapped copy is used where it lies.
constexpr uint32_t binary_version = 2;
constexpr std::size_t binary_alignment = 8;

template <class T>
void put(std::string& out, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <class T>
void put_vector(std::string& out, std::span<const T> v) {
  static_assert(std::is_trivially_copyable_v<T>);
  put<uint64_t>(out, v.size());
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Zero bytes up to the next multiple of binary_alignment.
void pad(std::string& out) { out.append((binary_alignment - out.size() % binary_alignment) % binary_alignment, '\0'); }

// Reads what put/put_vector wrote; `ok` turns false at the first read past the end.
struct byte_reader {
  std::string_view bytes;
  std::size_t pos = 0;
  bool ok = true;

  template <class T>
  T get() {
    T v{};
    if (!ok || bytes.size() - pos < sizeof v) {
      ok = false;
      return v;
    }
    std::memcpy(&v, bytes.data() + pos, sizeof v);
    pos += sizeof v;
    return v;
  }
  template <class T>
  void get_vector(std::vector<T>& v) {
    const auto n = get<uint64_t>();
    if (!ok || n > (bytes.size() - pos) / sizeof(T)) {
      ok = false;
      return;
    }
    v.resize(static_cast<std::size_t>(n));
    std::memcpy(v.data(), bytes.data() + pos, static_cast<std::size_t>(n) * sizeof(T));
    pos += static_cast<std::size_t>(n) * sizeof(T);
  }
  // A count and that many T where they lie (`bytes` starts 8-byte aligned, and the writer
  // aligned these).
  template <class T>
  std::span<const T> get_span() {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= binary_alignment);
    const auto n = get<uint64_t>();
    if (!ok || n > (bytes.size() - pos) / sizeof(T) || pos % alignof(T) != 0) {
      ok = false;
      return {};
    }
    const auto* first = reinterpret_cast<const T*>(bytes.data() + pos);
    pos += static_cast<std::size_t>(n) * sizeof(T);
    return {first, static_cast<std::size_t>(n)};
  }
  void skip_padding() {
    const std::size_t to = (pos + binary_alignment - 1) / binary_alignment * binary_alignment;
    if (!ok || to > bytes.size()) {
      ok = false;
      return;
    }
    pos = to;
  }
  std::string_view get_bytes(std::size_t n) {
    if (!ok || bytes.size() - pos < n) {
      ok = false;
      return {};
    }
    auto out = bytes.substr(pos, n);
    pos += n;
    return out;
  }
};

uint64_t bytes_hash(std::string_view s) { return std::hash<std::string_view>{}(s); }

// Copies of other texts (earlier versions of a model's LM) not read for copy_max_age are
// removed when a new copy is written, so the cache does not grow with every model update.
void prune_copies(const std::string& dir, const std::string& keep) {
  std::error_code ec;
  const auto now = std::filesystem::file_time_type::clock::now();
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto& p = it->path();
    const auto name = p.filename().string();
    if (p == std::filesystem::path(keep) || !name.starts_with("lm-") || !name.ends_with(".bin")) continue;
    std::error_code tec;
    const auto t = std::filesystem::last_write_time(p, tec);
    if (!tec && now - t > arpa_lm::copy_max_age) std::filesystem::remove(p, tec);
  }
}

}  // namespace

result<arpa_lm> arpa_lm::load(const std::string& path, const arpa_options& opts) {
  auto text = config::mapped_file::open(path);
  if (!text) return tl::unexpected(text.error());
  return parse(text->text(), path, opts);
}

uint64_t arpa_lm::text_hash(std::string_view text) {
  return bytes_hash(text) ^ (static_cast<uint64_t>(text.size()) * 0x9E3779B97F4A7C15ull);
}

std::string arpa_lm::to_binary(uint64_t source_hash) const {
  static_assert(std::is_trivially_copyable_v<entry> && sizeof(entry) == 24);
  static_assert(std::is_trivially_copyable_v<flat_u64_slot<ngram_ref>> && sizeof(flat_u64_slot<ngram_ref>) == 24);
  std::string out(binary_magic, sizeof binary_magic);
  put(out, binary_version);
  put(out, source_hash);
  put(out, order_);
  put(out, begin_state_);
  put(out, unk_id_);
  put(out, end_id_);
  put_vector(out, std::span<const int64_t>(counts_));
  put<uint64_t>(out, words_.size());
  for (const auto& w : words_) {
    put(out, static_cast<uint32_t>(w.size()));
    out += w;
  }
  pad(out);
  put_vector(out, entry_table());
  put_vector(out, std::span<const int32_t>(unigram_entry_));
  // The index as its table lies, with the stamp of its slots in use; a copy read back looks its
  // n-grams up there (frozen_u64_map) instead of inserting them again.
  // (A model read from a copy writes the copy's table: the same slots, in the same places.)
  pad(out);
  put(out, keep_ ? kept_index_.stamp() : index_.stamp());
  pad(out);
  put_vector(out, keep_ ? kept_index_.table() : index_.table());
  put(out, bytes_hash(out));  // the checksum of everything before it
  return out;
}

result<arpa_lm> arpa_lm::from_binary(std::string_view bytes, uint64_t source_hash, std::string_view source,
                                     const arpa_options& opts) {
  auto copy = std::make_shared<std::vector<uint64_t>>((bytes.size() + sizeof(uint64_t) - 1) / sizeof(uint64_t));
  if (!bytes.empty()) std::memcpy(copy->data(), bytes.data(), bytes.size());
  const std::span<const std::byte> view(reinterpret_cast<const std::byte*>(copy->data()), bytes.size());
  return from_binary(std::move(copy), view, source_hash, source, opts);
}

result<arpa_lm> arpa_lm::from_binary(std::shared_ptr<const void> keep, std::span<const std::byte> span,
                                     uint64_t source_hash, std::string_view source, const arpa_options& opts) {
  if (reinterpret_cast<std::uintptr_t>(span.data()) % binary_alignment != 0)
    return from_binary(std::string_view(reinterpret_cast<const char*>(span.data()), span.size()), source_hash, source,
                       opts);
  const std::string_view bytes(reinterpret_cast<const char*>(span.data()), span.size());
  const auto corrupt = [&](const std::string& what) {
    return fail(errc::corrupt, std::string(source) + ": not a usable binary word LM: " + what);
  };
  if (bytes.size() < sizeof binary_magic + sizeof(uint64_t)) return corrupt("too short");
  const auto body = bytes.substr(0, bytes.size() - sizeof(uint64_t));
  uint64_t checksum = 0;
  std::memcpy(&checksum, bytes.data() + body.size(), sizeof checksum);
  if (checksum != bytes_hash(body)) return corrupt("checksum mismatch (damaged or cut short)");
  byte_reader in{body};
  if (in.get_bytes(sizeof binary_magic) != std::string_view(binary_magic, sizeof binary_magic))
    return corrupt("no SLUICELM magic");
  if (in.get<uint32_t>() != binary_version) return corrupt("another format version");
  if (in.get<uint64_t>() != source_hash) return corrupt("made from another ARPA text");
  arpa_lm lm;
  lm.order_ = in.get<int32_t>();
  lm.begin_state_ = in.get<int32_t>();
  lm.unk_id_ = in.get<int32_t>();
  lm.end_id_ = in.get<int32_t>();
  in.get_vector(lm.counts_);
  const auto n_words = in.get<uint64_t>();
  if (!in.ok || n_words > body.size()) return corrupt("bad header");
  lm.words_.reserve(static_cast<std::size_t>(n_words));
  lm.word_ids_.reserve(static_cast<std::size_t>(n_words));
  for (uint64_t i = 0; i < n_words && in.ok; ++i) {
    const auto len = in.get<uint32_t>();
    const auto w = in.get_bytes(len);
    if (!in.ok) break;
    lm.words_.emplace_back(w);
    if (!lm.word_ids_.emplace(lm.words_.back(), static_cast<int32_t>(i)).second) return corrupt("a word twice");
  }
  in.skip_padding();
  const auto entries = in.get_span<entry>();
  in.get_vector(lm.unigram_entry_);
  in.skip_padding();
  const auto stamp = in.get<uint32_t>();
  in.skip_padding();
  const auto table = in.get_span<flat_u64_slot<ngram_ref>>();
  if (!in.ok || in.pos != body.size()) return corrupt("its sizes do not add up");
  // Every id in range, so no lookup can leave its array whatever the bytes say.
  const auto n_entries = static_cast<int64_t>(entries.size());
  const auto nw = static_cast<int32_t>(lm.words_.size());
  if (lm.order_ < 1 || static_cast<int32_t>(lm.counts_.size()) != lm.order_ || n_entries < 1 ||
      lm.begin_state_ < 0 || lm.begin_state_ >= n_entries || lm.unk_id_ < -1 || lm.unk_id_ >= nw || lm.end_id_ < -1 ||
      lm.end_id_ >= nw || lm.unigram_entry_.size() > lm.words_.size())
    return corrupt("a header value out of range");
  for (int32_t e : lm.unigram_entry_)
    if (e < -1 || e >= n_entries) return corrupt("a unigram entry out of range");
  std::size_t ngrams = 0;
  for (int64_t i = 1; i < n_entries; ++i) {
    const entry& e = entries[static_cast<std::size_t>(i)];
    if (e.word < 0 || e.word >= nw || e.context < 0 || e.context >= i || e.suffix < 0 || e.suffix >= n_entries ||
        e.order < 1 || e.order > lm.order_ || (e.context == 0) != (e.order == 1))
      return corrupt("entry " + std::to_string(i) + " out of range");
    ngrams += e.context > 0;
  }
  lm.keep_ = std::move(keep);
  lm.kept_entries_ = entries;
  if (!lm.kept_index_.view(table, stamp)) return corrupt("its n-gram table is not a hash table");
  // The table holds every n-gram of order > 1 once, each with its own entry's answer, and each
  // where a lookup of its key finds it (the lookups are short walks along the table in order).
  if (lm.kept_index_.size() != ngrams) return corrupt("its n-gram table does not hold every n-gram");
  std::vector<bool> seen(static_cast<std::size_t>(n_entries), false);
  for (std::size_t i = 0; i < table.size(); ++i) {
    const auto& sl = table[i];
    if (sl.stamp != stamp) continue;
    const int32_t id = sl.value.entry;
    if (id < 1 || id >= n_entries || seen[static_cast<std::size_t>(id)]) return corrupt("a bad n-gram slot");
    seen[static_cast<std::size_t>(id)] = true;
    const entry& e = entries[static_cast<std::size_t>(id)];
    const lm_step want = lm.step_of(id);
    if (e.context == 0 || sl.key != key(e.context, e.word) || sl.value.step.next != want.next ||
        std::memcmp(&sl.value.step.log_prob, &want.log_prob, sizeof want.log_prob) != 0)
      return corrupt("an n-gram slot that does not match its entry");
    if (lm.kept_index_.find(sl.key) != &sl.value) return corrupt("an n-gram its lookup does not find");
  }
  lm.index_unigram_steps();
  if (!std::isfinite(opts.oov_log10_prob) || opts.oov_log10_prob > 0)
    return fail(errc::invalid_argument, "arpa: oov_log10_prob must be a finite log10 probability <= 0");
  lm.oov_log_prob_ = opts.oov_log10_prob * std::numbers::ln10_v<float>;
  lm.index_word_bounds();
  return lm;
}

result<arpa_lm> arpa_lm::load_cached(const std::string& path, const std::string& cache_dir, const arpa_options& opts,
                                     cache_info* info) {
  if (info) *info = {};
  if (cache_dir.empty()) return load(path, opts);
  // Mapped, not read: the text is only hashed when its parsed copy is kept.
  auto text = config::mapped_file::open(path);
  if (!text) return tl::unexpected(text.error());
  const uint64_t h = text_hash(text->text());
  // The format's version is in the name too, so sluice builds of two formats on one machine
  // keep a copy each instead of rewriting one another's at every start.
  const uint64_t name_key = h ^ (uint64_t{binary_version} * 0x9E3779B97F4A7C15ull);
  const std::string file = config::cache_file(cache_dir, "lm", name_key, ".bin");
  if (info) info->file = file;
  if (auto mapped = config::mapped_file::open(file)) {
    // The model keeps the mapping. Copies are only ever replaced by renaming a new file over
    // them (write_cache_file) or removed (prune_copies), never rewritten in place, so the pages
    // a model reads stay those it checked.
    auto kept = std::make_shared<const config::mapped_file>(std::move(*mapped));
    const auto bytes = kept->bytes();
    if (auto lm = from_binary(std::move(kept), bytes, h, file, opts)) {
      if (info) info->hit = true;
      std::error_code ec;  // in use: its age for prune_copies starts again
      std::filesystem::last_write_time(file, std::filesystem::file_time_type::clock::now(), ec);
      return lm;
    }
  }
  auto lm = parse(text->text(), path, opts);
  if (lm && config::write_cache_file(file, lm->to_binary(h))) prune_copies(cache_dir, file);
  return lm;
}

int64_t arpa_lm::ngram_count(int32_t n) const {
  if (n < 1 || n > order_) return 0;
  return counts_[static_cast<std::size_t>(n - 1)];
}

int32_t arpa_lm::word_id(std::string_view w) const {
  auto it = word_ids_.find(w);
  return it == word_ids_.end() ? -1 : it->second;
}

int32_t arpa_lm::find(int32_t context, int32_t word) const {
  // Unigrams, where every backoff ends, by index rather than through the large n-gram table.
  if (context == 0) {
    const auto w = static_cast<std::size_t>(word);
    return word >= 0 && w < unigram_entry_.size() ? unigram_entry_[w] : -1;
  }
  const ngram_ref* e = find_ref(key(context, word));
  return e ? e->entry : -1;
}

lm_step arpa_lm::step_of(int32_t id) const {
  const entry& e = entry_table()[static_cast<std::size_t>(id)];
  return {e.log_prob, e.order < order_ ? id : e.suffix};
}

void arpa_lm::index_unigram_steps() {
  unigram_step_.assign(unigram_entry_.size(), lm_step{0, -1});
  for (std::size_t w = 0; w < unigram_entry_.size(); ++w)
    if (const int32_t id = unigram_entry_[w]; id >= 0) unigram_step_[w] = step_of(id);
}

void arpa_lm::index_word_bounds() {
  // score() finds the n-gram after summing the backoffs of the histories it left, at most one
  // per order, highest first: a sum at most that of each order's largest weight (or 0), added
  // in the same order, so in float too (rounding is monotonic) every answer is at most the
  // bound.
  std::vector<float> most_backoff(static_cast<std::size_t>(order_) + 1, 0.0f);
  word_bound_.assign(words_.size(), -std::numeric_limits<float>::infinity());
  const auto entries = entry_table();
  for (std::size_t i = 1; i < entries.size(); ++i) {
    const entry& e = entries[i];
    float& m = most_backoff[static_cast<std::size_t>(e.order)];  // the top order's stays 0
    if (e.order < order_) m = std::max(m, e.log_backoff);
    float& b = word_bound_[static_cast<std::size_t>(e.word)];
    b = std::max(b, e.log_prob);
  }
  float backoffs = 0;
  for (int32_t o = order_ - 1; o >= 1; --o) backoffs += most_backoff[static_cast<std::size_t>(o)];
  for (std::size_t w = 0; w < word_bound_.size(); ++w) {
    float& b = word_bound_[w];
    // unigram() answers a word it does not list so (a copy may list fewer words than it names).
    if (w >= unigram_step_.size() || unigram_step_[w].next < 0) b = std::max(b, oov_log_prob_);
    b = backoffs + b;
  }
}

lm_step arpa_lm::unigram(int32_t word, float backoff) const {
  // Every valid word id is a unigram, so only an id from elsewhere is not listed here.
  const auto w = static_cast<std::size_t>(word);
  if (w >= unigram_step_.size() || unigram_step_[w].next < 0) return {oov_log_prob_, null_state()};
  return {backoff + unigram_step_[w].log_prob, unigram_step_[w].next};
}

int32_t arpa_lm::find_sequence(const std::vector<int32_t>& words, std::size_t first) const {
  int32_t e = 0;
  for (std::size_t i = first; i < words.size() && e >= 0; ++i) e = find(e, words[i]);
  return e;
}

lm_step arpa_lm::score(int32_t state, int32_t word) const {
  if (word < 0) {
    if (unk_id_ < 0) return {oov_log_prob_, null_state()};
    word = unk_id_;
  }
  float backoff = 0;
  const auto entries = entry_table();
  for (int32_t ctx = state; ctx != 0;) {
    if (const ngram_ref* r = find_ref(key(ctx, word))) return {backoff + r->step.log_prob, r->step.next};
    const entry& c = entries[static_cast<std::size_t>(ctx)];
    backoff += c.log_backoff;
    ctx = c.suffix;
  }
  // Unigrams, where every backoff ends, by index rather than through the large n-gram table.
  return unigram(word, backoff);
}

void arpa_lm::score_all(std::span<query> queries, std::vector<uint32_t>& scratch) const {
  // A query in progress: its history so far (ctx) in answer.next and the backoff summed so far in
  // answer.log_prob; `scratch` lists the queries still open.
  scratch.clear();
  for (uint32_t i = 0; i < queries.size(); ++i) {
    query& q = queries[i];
    if (q.word < 0 && unk_id_ < 0) {
      q.answer = {oov_log_prob_, null_state()};
      continue;
    }
    q.answer = {0.0f, q.state};
    scratch.push_back(i);
  }
  const auto entries = entry_table();
  while (!scratch.empty()) {
    for (uint32_t i : scratch) {
      const query& q = queries[i];
      if (q.answer.next != 0) prefetch_ref(key(q.answer.next, q.word < 0 ? unk_id_ : q.word));
    }
    std::size_t open = 0;
    for (uint32_t i : scratch) {
      query& q = queries[i];
      const int32_t word = q.word < 0 ? unk_id_ : q.word;
      const int32_t ctx = q.answer.next;
      const float backoff = q.answer.log_prob;
      if (ctx == 0) {  // as score(): the unigram, by index
        q.answer = unigram(word, backoff);
        continue;
      }
      if (const ngram_ref* r = find_ref(key(ctx, word))) {
        q.answer = {backoff + r->step.log_prob, r->step.next};
        continue;
      }
      const entry& c = entries[static_cast<std::size_t>(ctx)];
      q.answer = {backoff + c.log_backoff, c.suffix};
      scratch[open++] = i;
    }
    scratch.resize(open);
  }
}

float arpa_lm::end_of_sentence(int32_t state) const {
  return end_id_ < 0 ? 0.0f : score(state, end_id_).log_prob;
}

}  // namespace sluice::moe
