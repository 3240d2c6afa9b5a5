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
/// The key ~0 (all ones) is the empty marker; it is stored beside the table, so every key works.
/// Pointers to values stay valid until the next insertion.

#include <bit>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace sluice::moe {

template <class V>
class flat_u64_map {
 public:
  flat_u64_map() = default;

  std::size_t size() const { return size_ + (has_empty_key_ ? 1 : 0); }
  bool empty() const { return size() == 0; }

  /// The value of `key`, or null.
  const V* find(uint64_t key) const {
    if (key == empty_key) return has_empty_key_ ? &empty_key_value_ : nullptr;
    if (slots_.empty()) return nullptr;
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      const slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == empty_key) return nullptr;
    }
  }
  V* find(uint64_t key) { return const_cast<V*>(std::as_const(*this).find(key)); }

  /// The value of `key`, inserted as `value` when missing; second: whether it was inserted.
  std::pair<V*, bool> try_emplace(uint64_t key, const V& value) {
    if (key == empty_key) {
      const bool inserted = !has_empty_key_;
      if (inserted) empty_key_value_ = value, has_empty_key_ = true;
      return {&empty_key_value_, inserted};
    }
    if ((size_ + 1) * 2 > slots_.size()) grow((size_ + 1) * 2);
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      slot& s = slots_[i];
      if (s.key == key) return {&s.value, false};
      if (s.key == empty_key) {
        s.key = key;
        s.value = value;
        ++size_;
        return {&s.value, true};
      }
    }
  }

  /// Room for `n` keys without growing.
  void reserve(std::size_t n) {
    if (n * 2 > slots_.size()) grow(n * 2);
  }

  /// Forgets every key; keeps the table's memory.
  void clear() {
    if (size_ > 0)
      for (slot& s : slots_) s.key = empty_key;
    size_ = 0;
    has_empty_key_ = false;
  }

  /// Calls f(key, value) for every entry, in no particular order.
  template <class F>
  void for_each(F&& f) const {
    for (const slot& s : slots_)
      if (s.key != empty_key) f(s.key, s.value);
    if (has_empty_key_) f(empty_key, empty_key_value_);
  }

  /// Heap bytes held.
  std::size_t memory_bytes() const { return slots_.capacity() * sizeof(slot); }

 private:
  static constexpr uint64_t empty_key = ~uint64_t{0};
  struct slot {
    uint64_t key = empty_key;
    V value{};
  };

  std::size_t home(uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }

  // A table of at least `min_slots` (a power of two >= 16), every key re-inserted.
  void grow(std::size_t min_slots) {
    const std::size_t n = std::bit_ceil(std::max<std::size_t>(min_slots, 16));
    std::vector<slot> old;
    old.swap(slots_);
    slots_.assign(n, slot{});
    mask_ = n - 1;
    shift_ = 64 - std::countr_zero(n);
    size_ = 0;
    for (const slot& s : old)
      if (s.key != empty_key) try_emplace(s.key, s.value);
  }

  std::vector<slot> slots_;
  std::size_t mask_ = 0;
  int shift_ = 64;
  std::size_t size_ = 0;  // keys in slots_ (the empty marker's key not counted)
  bool has_empty_key_ = false;
  V empty_key_value_{};
};

}  // namespace sluice::moe
