#pragma once
/// Hotword biasing: a token trie of the request's phrases with Aho-Corasick failure links, walked
/// token by token alongside every beam-search hypothesis.
///
/// Scoring (all in ln units, added to the hypothesis score as it grows):
///  - each token that moves a hypothesis one step down a hotword's path earns that hotword's
///    weight (phrases sharing a prefix share its nodes; a shared node earns the largest weight);
///  - when the next token leaves the path before the hotword is complete, everything earned since
///    the last completed hotword is taken back, and the walk continues from the longest suffix of
///    the text that is again a hotword prefix (its tokens earn their bonus again there);
///  - completing a hotword keeps its bonus for good. So does ending the utterance (finish()) right
///    after a hotword's last token.
/// With a <space> token in the vocabulary, hotwords match whole words only: each phrase is matched
/// as <space> phrase <space>, the utterance counts as starting after a space and finish() accepts
/// a phrase that ends at the end of the utterance. The boundary spaces earn nothing. A hotword met
/// inside a longer one that then breaks off (say "acme" in "big acme corp" when "corp" does not
/// follow) gets no bonus: only the path being walked counts. Overlapping hotwords ("acme corp",
/// "corp inc") may both earn their shared tokens.
///
/// Built per request; read-only afterwards (many hypotheses share it). A default-constructed
/// graph is empty: every step is worth 0.

#include <cstdint>
#include <span>
#include <string>

#include <vector>

#include "config/error.hpp"
#include "moe/decoder/flat_map.hpp"
#include "moe/tokens.hpp"

namespace sluice::moe {

struct hotword {
  std::string phrase;  ///< words separated by white space; letters the vocabulary lacks are case-folded
  float weight = 0;    ///< bonus per token (ln units), >= 0
};

/// Where one hypothesis stands in the graph.
struct context_state {
  int32_t node = 0;
  float pending = 0;  ///< bonus earned since the last completed hotword (taken back on a break-off)
  bool operator==(const context_state&) const = default;
};

struct context_step {
  float delta = 0;        ///< change of the hypothesis score for this token
  context_state next;
  bool completed = false; ///< this token completed a hotword
};

class context_graph {
 public:
  /// Largest weight a hotword may carry (ln units per token).
  static constexpr float max_weight = 100.0f;

  context_graph();

  /// errc::invalid_argument naming the phrase when one is empty, has a character with no token,
  /// or its weight is not in [0, max_weight].
  static result<context_graph> build(std::span<const hotword> hotwords, const token_table& tokens);

  bool empty() const { return nodes_.size() <= 1; }
  int32_t size() const { return static_cast<int32_t>(nodes_.size()); }  ///< nodes, root included

  /// The state of a hypothesis at the start of an utterance.
  context_state start() const { return start_; }
  /// Walks one token (never the blank).
  context_step step(context_state s, int32_t token) const;
  /// Score change when the utterance ends in `s`: takes back the bonus of an unfinished hotword.
  float finish(context_state s) const;

 private:
  struct node {
    float bonus = 0;               ///< earned by stepping onto this node
    float score = 0;               ///< sum of bonuses from the root to here
    int32_t fail = 0;              ///< longest proper suffix of this node's path that is in the trie
    bool is_end = false;           ///< a hotword ends here
    bool complete_at_end = false;  ///< a hotword ends here if the utterance ends (its last space missing)
  };

  int32_t child(int32_t n, int32_t token) const;
  int32_t add_child(int32_t n, int32_t token);
  int32_t next_node(int32_t n, int32_t token) const;
  void link();

  std::vector<node> nodes_;
  flat_u64_map<int32_t> children_;  ///< (node << 32 | token) -> child node
  std::vector<std::vector<int32_t>> child_lists_;   ///< per node: its children, for the BFS in link()
  context_state start_;
};

}  // namespace sluice::moe
