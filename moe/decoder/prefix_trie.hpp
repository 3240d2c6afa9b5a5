#pragma once
/// The label prefixes of one utterance's beam search as a tree. Node 0 is the empty prefix; every
/// other node is its parent's prefix plus one token, so a prefix is identified by one int32 and
/// equal prefixes reached from different hypotheses meet at the same node. Only surviving
/// hypotheses add nodes (at most beam_size per frame); clear() at the end of an utterance.

#include <cstdint>
#include <vector>

#include "moe/decoder/flat_map.hpp"

namespace sluice::moe {

class prefix_trie {
 public:
  static constexpr int32_t root = 0;

  prefix_trie() { clear(); }

  /// Identifies the prefix "parent's prefix + token" whether or not its node exists yet
  /// (the root is key(-1, -1)).
  static uint64_t key(int32_t parent, int32_t token) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(parent + 1)) << 32) | static_cast<uint32_t>(token);
  }

  /// The child of `parent` by `token`, or -1.
  int32_t find(int32_t parent, int32_t token) const {
    const int32_t* c = children_.find(key(parent, token));
    return c ? *c : -1;
  }

  /// The child of `parent` by `token`, created when missing.
  int32_t add(int32_t parent, int32_t token) {
    auto [c, inserted] = children_.try_emplace(key(parent, token), static_cast<int32_t>(nodes_.size()));
    if (inserted) nodes_.push_back({parent, token});
    return *c;
  }

  int32_t parent(int32_t n) const { return nodes_[static_cast<std::size_t>(n)].parent; }
  /// The last token of the prefix (-1 for the root).
  int32_t token(int32_t n) const { return nodes_[static_cast<std::size_t>(n)].token; }
  int32_t size() const { return static_cast<int32_t>(nodes_.size()); }

  /// The prefix's tokens, first to last.
  std::vector<int32_t> labels(int32_t n) const {
    std::vector<int32_t> out;
    for (; n != root; n = parent(n)) out.push_back(token(n));
    return {out.rbegin(), out.rend()};
  }

  /// Heap bytes held: the nodes and the child index.
  std::size_t memory_bytes() const { return nodes_.capacity() * sizeof(node) + children_.memory_bytes(); }

  void clear() {
    nodes_.assign(1, {-1, -1});
    children_.clear();
  }

 private:
  struct node {
    int32_t parent;
    int32_t token;
  };
  std::vector<node> nodes_;
  flat_u64_map<int32_t> children_;
};

}  // namespace sluice::moe
