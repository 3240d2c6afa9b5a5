#include "moe/decoder/context_graph.hpp"

#include <cctype>
#include <cmath>
#include <algorithm>
#include <deque>

namespace sluice::moe {

namespace {

constexpr int32_t root = 0;

uint64_t edge_key(int32_t n, int32_t token) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(n)) << 32) | static_cast<uint32_t>(token);
}

// The phrase as token ids: its words spelled as the vocabulary spells them (token_table::
// spell_word: a character without a token of its own is looked up lowercased, as clients send
// "Acme Corp" and the vocabulary is lowercase), joined by <space> in a character vocabulary and
// simply concatenated in a word-piece one (each word starts with a word-start piece).
result<std::vector<int32_t>> phrase_tokens(const std::string& phrase, const token_table& tokens) {
  std::vector<int32_t> ids;
  std::size_t pos = 0;
  while (pos < phrase.size()) {
    while (pos < phrase.size() && std::isspace(static_cast<unsigned char>(phrase[pos]))) ++pos;
    std::size_t end = pos;
    while (end < phrase.size() && !std::isspace(static_cast<unsigned char>(phrase[end]))) ++end;
    if (end == pos) break;
    if (!ids.empty() && !tokens.pieces()) {
      if (tokens.space_id() < 0)
        return fail(errc::invalid_argument, "hotword '" + phrase + "': the vocabulary has no <space> token");
      ids.push_back(tokens.space_id());
    }
    auto word = tokens.spell_word(std::string_view(phrase).substr(pos, end - pos));
    if (!word) return fail(errc::invalid_argument, "hotword '" + phrase + "': " + word.error().message);
    ids.insert(ids.end(), word->begin(), word->end());
    pos = end;
  }
  if (ids.empty()) return fail(errc::invalid_argument, "hotword '" + phrase + "' is empty");
  return ids;
}

}  // namespace

context_graph::context_graph() : nodes_(1), child_lists_(1) {}

int32_t context_graph::child(int32_t n, int32_t token) const {
  const int32_t* c = children_.find(edge_key(n, token));
  return c ? *c : -1;
}

int32_t context_graph::add_child(int32_t n, int32_t token) {
  if (int32_t c = child(n, token); c >= 0) return c;
  const auto id = static_cast<int32_t>(nodes_.size());
  nodes_.emplace_back();
  child_lists_.emplace_back();
  children_.try_emplace(edge_key(n, token), id);
  child_lists_[static_cast<std::size_t>(n)].push_back(id);
  return id;
}

result<context_graph> context_graph::build(std::span<const hotword> hotwords, const token_table& tokens) {
  context_graph g;
  const int32_t space = tokens.space_id();
  for (const hotword& h : hotwords) {
    if (!std::isfinite(h.weight) || h.weight < 0 || h.weight > max_weight)
      return fail(errc::invalid_argument, "hotword '" + h.phrase + "': weight " + std::to_string(h.weight) +
                                              " is outside 0 .. " + std::to_string(max_weight));
    auto ids = phrase_tokens(h.phrase, tokens);
    if (!ids) return tl::unexpected(ids.error());
    int32_t n = root;
    auto walk = [&](int32_t token, float bonus) {
      n = g.add_child(n, token);
      node& x = g.nodes_[static_cast<std::size_t>(n)];
      x.bonus = std::max(x.bonus, bonus);
    };
    if (space >= 0) walk(space, 0.0f);
    for (int32_t id : *ids) walk(id, h.weight);
    if (space >= 0) {
      g.nodes_[static_cast<std::size_t>(n)].complete_at_end = true;
      walk(space, 0.0f);
    }
    g.nodes_[static_cast<std::size_t>(n)].is_end = true;
  }
  g.link();
  if (space >= 0 && !g.empty()) g.start_ = {g.child(root, space), 0.0f};
  return g;
}

// Breadth-first, so a node's failure target (a shorter path) is final before the node is seen.
void context_graph::link() {
  std::deque<std::pair<int32_t, int32_t>> queue;  // (node, token on its incoming edge)
  std::vector<int32_t> token_into(nodes_.size(), -1);
  children_.for_each(
      [&](uint64_t key, int32_t c) { token_into[static_cast<std::size_t>(c)] = static_cast<int32_t>(key & 0xffffffffu); });
  for (int32_t c : child_lists_[root]) {
    nodes_[static_cast<std::size_t>(c)].fail = root;
    nodes_[static_cast<std::size_t>(c)].score = nodes_[static_cast<std::size_t>(c)].bonus;
    queue.emplace_back(c, token_into[static_cast<std::size_t>(c)]);
  }
  while (!queue.empty()) {
    const int32_t u = queue.front().first;
    queue.pop_front();
    for (int32_t v : child_lists_[static_cast<std::size_t>(u)]) {
      const int32_t token = token_into[static_cast<std::size_t>(v)];
      node& nv = nodes_[static_cast<std::size_t>(v)];
      nv.score = nodes_[static_cast<std::size_t>(u)].score + nv.bonus;
      nv.fail = next_node(nodes_[static_cast<std::size_t>(u)].fail, token);
      if (nv.fail == v) nv.fail = root;
      queue.emplace_back(v, token);
    }
  }
}

int32_t context_graph::next_node(int32_t n, int32_t token) const {
  for (;;) {
    if (int32_t c = child(n, token); c >= 0) return c;
    if (n == root) return root;
    n = nodes_[static_cast<std::size_t>(n)].fail;
  }
}

context_step context_graph::step(context_state s, int32_t token) const {
  if (empty()) return {0.0f, s, false};
  context_step out;
  if (int32_t c = child(s.node, token); c >= 0) {
    const float bonus = nodes_[static_cast<std::size_t>(c)].bonus;
    out.delta = bonus;
    out.next = {c, s.pending + bonus};
  } else {
    // The path broke off: give back what it earned, then resume on the longest suffix that is
    // again a hotword prefix, which earns its own tokens' bonus.
    const int32_t n = next_node(nodes_[static_cast<std::size_t>(s.node)].fail, token);
    const float score = n == root ? 0.0f : nodes_[static_cast<std::size_t>(n)].score;
    out.delta = score - s.pending;
    out.next = {n, score};
  }
  if (nodes_[static_cast<std::size_t>(out.next.node)].is_end) {
    out.next.pending = 0;
    out.completed = true;
  }
  return out;
}

float context_graph::finish(context_state s) const {
  if (nodes_[static_cast<std::size_t>(s.node)].complete_at_end) return 0.0f;
  return -s.pending;
}

}  // namespace sluice::moe
