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
#include <utility>
#include <vector>

namespace sluice::moe {

template <class V>
class flat_u64_map {
 public:
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

 private:
  struct slot {
    uint64_t key = 0;
    uint32_t stamp = 0;  // in use when equal to the table's stamp_
    V value{};
  };

  V& fill(slot& s, uint64_t key, const V& value) {
    s.key = key;
    s.stamp = stamp_;
    s.value = value;
    ++size_;
    return s.value;
  }

  std::size_t home(uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }

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

}  // namespace sluice::moe
