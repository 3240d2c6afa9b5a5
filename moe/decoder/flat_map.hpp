#pragma once
/// A hash map from uint64 keys to small trivially copyable values, for the decoders' hot paths
/// (prefix tries, per-frame hypothesis slots, LM n-gram index and memo): open addressing with
/// linear probing in one flat array, Fibonacci hashing, at most half full. Unlike
/// std::unordered_map, inserting allocates nothing until the table doubles, clear() keeps the
/// memory, and a lookup touches one or two cache lines instead of a bucket and a node. Written
/// here rather than taken from a library because the decoders' time is spent in these lookups
/// (perf of decoder_bench: std::unordered_map's find, node allocation and free were 20-25% of the
/// lexicon decoder's) and Debian 12 ships no header-only flat map made for it.
///
/// A slot is in use when its stamp equals the table's, so clear() is O(1) (it starts a new
/// stamp): the decoders clear their per-frame maps every frame. Every key is allowed. Pointers
/// to values stay valid until the next insertion of a new key (or reserve()).

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace sluice::moe {

/// One slot of a flat_u64_map's table, public so a table can be written to a file and looked
/// up where it lies (frozen_u64_map).
template <class V>
struct flat_u64_slot {
  uint64_t key = 0;
  uint32_t stamp = 0;  // in use when equal to the table's stamp
  V value{};
};

/// Where a lookup of `key` starts in a table of mask + 1 slots (shift = 64 - log2(mask + 1)).
inline std::size_t flat_u64_home(uint64_t key, int shift, std::size_t mask) {
  return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift) & mask;
}

template <class V>
class flat_u64_map {
 public:
  using slot = flat_u64_slot<V>;
  flat_u64_map() = default;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// The value of `key`, or null.
  const V* find(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      const slot& s = slots_[i];
      if (s.stamp != stamp_) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  V* find(uint64_t key) { return const_cast<V*>(std::as_const(*this).find(key)); }

  /// Starts loading the slot where a lookup of `key` begins into the cache.
  void prefetch(uint64_t key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(key)]);
  }

  /// The value of `key`, inserted as `value` when missing; second: whether it was inserted.
  std::pair<V*, bool> try_emplace(uint64_t key, const V& value) {
    if (!slots_.empty()) {
      std::size_t i = home(key);
      for (; slots_[i].stamp == stamp_; i = (i + 1) & mask_)
        if (slots_[i].key == key) return {&slots_[i].value, false};
      if ((size_ + 1) * 2 <= slots_.size()) return {&fill(slots_[i], key, value), true};
    }
    const V copy = value;  // `value` may live in the table grow() frees
    grow((size_ + 1) * 2);
    std::size_t i = home(key);
    while (slots_[i].stamp == stamp_) i = (i + 1) & mask_;
    return {&fill(slots_[i], key, copy), true};
  }

  /// Room for `n` keys without growing.
  void reserve(std::size_t n) {
    if (n * 2 > slots_.size()) grow(n * 2);
  }

  /// Forgets every key; keeps the table's memory.
  void clear() {
    size_ = 0;
    if (++stamp_ == 0) {  // the stamp wrapped: no slot may look in use
      for (slot& s : slots_) s.stamp = 0;
      stamp_ = 1;
    }
  }

  /// Calls f(key, value) for every entry, in no particular order.
  template <class F>
  void for_each(F&& f) const {
    for (const slot& s : slots_)
      if (s.stamp == stamp_) f(s.key, s.value);
  }

  /// Heap bytes held.
  std::size_t memory_bytes() const { return slots_.capacity() * sizeof(slot); }

  /// The table as it lies (empty before the first insertion) and the stamp of its slots in use:
  /// what frozen_u64_map looks up, e.g. after a trip through a file.
  std::span<const slot> table() const { return slots_; }
  uint32_t stamp() const { return stamp_; }

 private:

  V& fill(slot& s, uint64_t key, const V& value) {
    s.key = key;
    s.stamp = stamp_;
    s.value = value;
    ++size_;
    return s.value;
  }

  std::size_t home(uint64_t key) const { return flat_u64_home(key, shift_, mask_); }

  // A table of at least `min_slots` (a power of two >= 16), every key re-inserted.
  void grow(std::size_t min_slots) {
    const std::size_t n = std::bit_ceil(std::max<std::size_t>(min_slots, 16));
    std::vector<slot> old;
    old.swap(slots_);
    const uint32_t old_stamp = stamp_;
    slots_.assign(n, slot{});
    stamp_ = 1;
    mask_ = n - 1;
    shift_ = 64 - std::countr_zero(n);
    size_ = 0;
    for (const slot& s : old)
      if (s.stamp == old_stamp) {
        std::size_t i = home(s.key);
        while (slots_[i].stamp == stamp_) i = (i + 1) & mask_;
        fill(slots_[i], s.key, s.value);
      }
  }

  std::vector<slot> slots_;
  std::size_t mask_ = 0;
  int shift_ = 64;
  std::size_t size_ = 0;
  uint32_t stamp_ = 1;
};

/// A read-only lookup in a table a flat_u64_map laid out (its table() and stamp()), wherever
/// the table lies now, e.g. in a mapped file: the same find() and prefetch(), no insertion. It
/// owns nothing; the table must outlive it.
template <class V>
class frozen_u64_map {
 public:
  using slot = flat_u64_slot<V>;
  frozen_u64_map() = default;

  /// Views `table`, whose size must be 0 or a power of two with a slot not in use (so every
  /// lookup ends; view() of anything else is false and leaves the map empty). Whether each key
  /// lies where its lookup finds it is the writer's affair: a misplaced key is not found, never
  /// read out of bounds.
  bool view(std::span<const slot> table, uint32_t stamp) {
    *this = {};
    if (table.empty()) return true;
    if (!std::has_single_bit(table.size()) || table.size() < 2) return false;
    std::size_t used = 0;
    for (const slot& s : table) used += s.stamp == stamp;
    if (used == table.size()) return false;
    slots_ = table.data();
    mask_ = table.size() - 1;
    shift_ = 64 - std::countr_zero(table.size());
    stamp_ = stamp;
    size_ = used;
    return true;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// The table viewed, and the stamp of its slots in use.
  std::span<const slot> table() const {
    return slots_ ? std::span<const slot>(slots_, mask_ + 1) : std::span<const slot>();
  }
  uint32_t stamp() const { return stamp_; }

  const V* find(uint64_t key) const {
    if (!slots_) return nullptr;
    for (std::size_t i = flat_u64_home(key, shift_, mask_);; i = (i + 1) & mask_) {
      const slot& s = slots_[i];
      if (s.stamp != stamp_) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  void prefetch(uint64_t key) const {
    if (slots_) __builtin_prefetch(&slots_[flat_u64_home(key, shift_, mask_)]);
  }

 private:
  const slot* slots_ = nullptr;
  std::size_t mask_ = 0;
  int shift_ = 64;
  uint32_t stamp_ = 1;
  std::size_t size_ = 0;
};

}  // namespace sluice::moe
