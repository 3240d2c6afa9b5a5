#pragma once
/// The decoding vocabulary of the lexicon decoder as a trie over the model's tokens: every word is
/// spelled token by token from the root, as token_table::spell_word spells it (characters, or the
/// tokenizer's word pieces); a node where a word ends carries the word's
/// LM id (-1 when the LM does not list it, so it scores as an unknown word) and every node carries
/// a look-ahead: the best unigram ln probability of the words below it (0 without an LM), which the
/// search adds provisionally while a word is being spelled so that half-spelled words and finished
/// words compete on comparable scores.
///
/// Sources: the LM's unigrams (not <s>, </s>, <unk>), a user lexicon file (one word per line,
/// optionally followed by anything after white space, as in a pronunciation lexicon; '#' starts a
/// comment line), the request's hotwords. Words holding a character the model has no token for, or
/// a space, are skipped and counted; letters the model lacks are case-folded first. Read-only after building; share one between streams.
///
/// A lexicon_view walks a shared base lexicon and a small per-request one (the hotwords' words)
/// together, so a request's words join the vocabulary without copying the base.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "moe/decoder/arpa_lm.hpp"
#include "moe/decoder/flat_map.hpp"
#include "moe/tokens.hpp"

namespace sluice::moe {

class word_lexicon {
 public:
  static constexpr int32_t root = 0;

  /// An empty lexicon (root only).
  word_lexicon();

  /// `words`, plus the LM's unigrams when `lm` is given and `with_lm_unigrams`. LM ids and
  /// look-aheads come from `lm` (none without).
  static word_lexicon build(const token_table& tokens, const arpa_lm* lm, std::span<const std::string> words,
                            bool with_lm_unigrams = true);

  /// Words of a lexicon file (see above); errc::io when it cannot be read.
  static result<std::vector<std::string>> read_words(const std::string& path);

  /// A node's child by one token, with what the decoder asks of the child (the same as is_word(),
  /// lm_word(), has_children() and lookahead() of `child`), kept beside it so one read answers.
  struct edge {
    int32_t token;
    int32_t child;
    int32_t lm_word;
    float lookahead;
    bool is_word;
    bool has_children;
  };
  /// The edge from `node` by `token`, or nullptr.
  const edge* find_edge(int32_t node, int32_t token) const {
    if (node == root) {  // every word's first step: by the token's index
      const auto t = static_cast<std::size_t>(token);
      return t < root_edge_.size() && root_edge_[t] >= 0 ? &edges_[static_cast<std::size_t>(root_edge_[t])] : nullptr;
    }
    const node_entry& n = nodes_[static_cast<std::size_t>(node)];
    const edge* e = edges_.data() + n.first_edge;
    const edge* end = edges_.data() + n.end_edge;
    if (end - e > 16) return find_edge_halving(e, end, token);  // e.g. a word-piece prefix node
    for (; e != end && e->token <= token; ++e)
      if (e->token == token) return e;
    return nullptr;
  }
  /// The child of `node` by `token`, or -1.
  int32_t child(int32_t node, int32_t token) const {
    const edge* e = find_edge(node, token);
    return e ? e->child : -1;
  }
  bool is_word(int32_t node) const { return nodes_[static_cast<std::size_t>(node)].is_word; }
  /// The LM's id of the word ending at `node` (-1: unknown to the LM, or no word ends here).
  int32_t lm_word(int32_t node) const { return nodes_[static_cast<std::size_t>(node)].lm_word; }
  /// Whether a longer word continues from `node`.
  bool has_children(int32_t node) const { return nodes_[static_cast<std::size_t>(node)].has_children; }
  /// Best unigram ln probability of a word at or below `node` (0 without an LM).
  float lookahead(int32_t node) const { return nodes_[static_cast<std::size_t>(node)].lookahead; }

  /// True when `word` (token ids, no spaces) is in the lexicon.
  bool contains(std::span<const int32_t> word) const;

  int32_t words() const { return n_words_; }
  int32_t skipped() const { return n_skipped_; }
  int32_t nodes() const { return static_cast<int32_t>(nodes_.size()); }
  /// Heap bytes held (nodes and the child index), for memory reports.
  std::size_t memory_bytes() const;

 private:
  struct node_entry {
    int32_t lm_word = -1;
    float lookahead = 0;
    bool is_word = false;
    bool has_children = false;
    int32_t first_edge = 0;  ///< after build(): the node's children are edges_[first_edge, end_edge)
    int32_t end_edge = 0;
  };
  static const edge* find_edge_halving(const edge* first, const edge* end, int32_t token);
  void add(std::span<const int32_t> spelling, int32_t lm_word, float unigram);
  /// Turns the build-time child index into the read-time one (the nodes' edge ranges, edges_).
  void freeze();

  std::vector<node_entry> nodes_;
  flat_u64_map<int32_t> building_;  ///< (node << 32 | token) -> child, while build() adds words
  // After build(): a node's children, by token, side by side, each edge carrying what the decoder
  // reads of its child: the decoder steps through this trie for every hypothesis and token of
  // every frame, and a step then reads the node and its few edges (one or two cache lines,
  // searched by halving above 16) but not each child's node.
  std::vector<edge> edges_;
  std::vector<int32_t> root_edge_;  ///< token -> the root's edge by it (-1: none), up to its largest token
  int32_t n_words_ = 0;
  int32_t n_skipped_ = 0;
};

/// Where a hypothesis stands in a base lexicon and a per-request one at once (-1: not in that one).
struct lexicon_cursor {
  int32_t base = word_lexicon::root;
  int32_t extra = word_lexicon::root;
  bool operator==(const lexicon_cursor&) const = default;
  bool dead() const { return base < 0 && extra < 0; }
};

/// A base lexicon plus an optional per-request one, read as one vocabulary.
class lexicon_view {
 public:
  lexicon_view() = default;
  lexicon_view(const word_lexicon* base, const word_lexicon* extra) : base_(base), extra_(extra) {}

  /// The cursor after `token`; dead() when no word continues that way.
  lexicon_cursor step(lexicon_cursor c, int32_t token) const;
  /// step() and what is_word(), has_children(), lm_word() and lookahead() answer for its cursor,
  /// read from the edges taken (the decoder's inner loop).
  struct walked {
    lexicon_cursor at{-1, -1};
    bool is_word = false;
    bool has_children = false;
    int32_t lm_word = -1;
    float lookahead = -std::numeric_limits<float>::infinity();
  };
  walked walk(lexicon_cursor c, int32_t token) const {
    walked out;
    const word_lexicon::edge* b = base_ && c.base >= 0 ? base_->find_edge(c.base, token) : nullptr;
    const word_lexicon::edge* x = extra_ && c.extra >= 0 ? extra_->find_edge(c.extra, token) : nullptr;
    if (b) {
      out.at.base = b->child;
      out.is_word = b->is_word;
      out.has_children = b->has_children;
      out.lm_word = b->is_word ? b->lm_word : -1;
      out.lookahead = b->lookahead;
    }
    if (x) {
      out.at.extra = x->child;
      out.has_children = out.has_children || x->has_children;
      if (x->is_word && out.lm_word < 0) out.lm_word = x->lm_word;
      out.is_word = out.is_word || x->is_word;
      out.lookahead = std::max(out.lookahead, x->lookahead);
    }
    return out;
  }
  bool is_word(lexicon_cursor c) const;
  /// Whether a longer word continues from `c`.
  bool has_children(lexicon_cursor c) const;
  /// The LM id of the word ending at `c` (the base's, else the extra's; -1 when unknown to the LM).
  int32_t lm_word(lexicon_cursor c) const;
  float lookahead(lexicon_cursor c) const;
  bool contains(std::span<const int32_t> word) const;

 private:
  const word_lexicon* base_ = nullptr;
  const word_lexicon* extra_ = nullptr;
};

}  // namespace sluice::moe
