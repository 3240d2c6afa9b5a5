#include "moe/decoder/word_lexicon.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <limits>

namespace sluice::moe {

namespace {

constexpr float no_lookahead = -std::numeric_limits<float>::infinity();

uint64_t child_key(int32_t node, int32_t token) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(node)) << 32) | static_cast<uint32_t>(token);
}

bool is_special(std::string_view w) {
  return w == arpa_lm::begin_sentence || w == arpa_lm::end_sentence || w == arpa_lm::unknown_word;
}

}  // namespace

word_lexicon::word_lexicon() {
  nodes_.push_back({-1, no_lookahead, false, false, 0, 0});
  freeze();
}

word_lexicon word_lexicon::build(const token_table& tokens, const arpa_lm* lm, std::span<const std::string> words,
                                 bool with_lm_unigrams) {
  word_lexicon lex;
  std::vector<int32_t> spelling;
  auto add_word = [&](std::string_view w, int32_t lm_word) {
    if (w.empty()) return;
    // A word is spelled as the model spells it (characters, case-folded when needed, or word
    // pieces); a word the model cannot spell, or a phrase with a space, is unreachable, so it is
    // left out rather than half-spelled.
    auto spelled = tokens.spell_word(w);
    if (!spelled) {
      ++lex.n_skipped_;
      return;
    }
    spelling = std::move(*spelled);
    if (spelling.empty()) return;
    // The unigram ln probability a word would get with no history: the same number score() gives
    // for an unknown word when the LM does not list it.
    const float unigram = lm ? lm->score(lm->null_state(), lm_word).log_prob : 0.0f;
    lex.add(spelling, lm_word, unigram);
  };
  if (lm && with_lm_unigrams)
    for (int32_t id = 0; id < lm->vocab_size(); ++id)
      if (!is_special(lm->word(id))) add_word(lm->word(id), id);
  for (const std::string& w : words) add_word(w, lm ? lm->word_id(w) : -1);
  if (!lm)
    for (node_entry& n : lex.nodes_) n.lookahead = 0;
  lex.freeze();
  return lex;
}

void word_lexicon::add(std::span<const int32_t> spelling, int32_t lm_word, float unigram) {
  int32_t n = root;
  nodes_[root].lookahead = std::max(nodes_[root].lookahead, unigram);
  for (int32_t token : spelling) {
    auto [child, inserted] = building_.try_emplace(child_key(n, token), static_cast<int32_t>(nodes_.size()));
    if (inserted) nodes_.push_back({-1, no_lookahead, false, false, 0, 0});
    nodes_[static_cast<std::size_t>(n)].has_children = true;
    n = *child;
    nodes_[static_cast<std::size_t>(n)].lookahead = std::max(nodes_[static_cast<std::size_t>(n)].lookahead, unigram);
  }
  node_entry& end = nodes_[static_cast<std::size_t>(n)];
  if (!end.is_word) ++n_words_;
  end.is_word = true;
  if (lm_word >= 0) end.lm_word = lm_word;
}

result<std::vector<std::string>> word_lexicon::read_words(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(errc::io, "cannot open lexicon file " + path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto last = line.find_first_of(" \t\r", first);
    out.push_back(line.substr(first, last == std::string::npos ? std::string::npos : last - first));
  }
  return out;
}

void word_lexicon::freeze() {
  std::vector<std::pair<uint64_t, int32_t>> all;
  all.reserve(building_.size());
  building_.for_each([&](uint64_t key, int32_t child) { all.emplace_back(key, child); });
  std::sort(all.begin(), all.end());  // by node, then token
  for (node_entry& n : nodes_) n.first_edge = n.end_edge = 0;
  edges_.clear();
  edges_.reserve(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto [key, child] = all[i];
    node_entry& parent = nodes_[static_cast<std::size_t>(key >> 32)];
    if (i == 0 || (all[i - 1].first >> 32) != (key >> 32)) parent.first_edge = static_cast<int32_t>(i);
    parent.end_edge = static_cast<int32_t>(i + 1);
    const node_entry& c = nodes_[static_cast<std::size_t>(child)];
    edges_.push_back({static_cast<int32_t>(key & 0xffffffffu), child, c.lm_word, c.lookahead, c.is_word, c.has_children});
  }
  root_edge_.clear();
  for (int32_t i = nodes_[root].first_edge; i < nodes_[root].end_edge; ++i) {
    const auto t = static_cast<std::size_t>(edges_[static_cast<std::size_t>(i)].token);
    if (t >= root_edge_.size()) root_edge_.resize(t + 1, -1);
    root_edge_[t] = i;
  }
  building_ = {};
}

const word_lexicon::edge* word_lexicon::find_edge_halving(const edge* first, const edge* end, int32_t token) {
  const edge* e = std::lower_bound(first, end, token, [](const edge& x, int32_t t) { return x.token < t; });
  return e != end && e->token == token ? e : nullptr;
}

bool word_lexicon::contains(std::span<const int32_t> word) const {
  int32_t n = root;
  for (int32_t token : word)
    if ((n = child(n, token)) < 0) return false;
  return !word.empty() && is_word(n);
}

std::size_t word_lexicon::memory_bytes() const {
  return nodes_.capacity() * sizeof(node_entry) + building_.memory_bytes() + edges_.capacity() * sizeof(edge) +
         root_edge_.capacity() * sizeof(int32_t);
}

lexicon_cursor lexicon_view::step(lexicon_cursor c, int32_t token) const {
  lexicon_cursor out{-1, -1};
  if (base_ && c.base >= 0) out.base = base_->child(c.base, token);
  if (extra_ && c.extra >= 0) out.extra = extra_->child(c.extra, token);
  return out;
}

bool lexicon_view::is_word(lexicon_cursor c) const {
  return (base_ && c.base >= 0 && base_->is_word(c.base)) || (extra_ && c.extra >= 0 && extra_->is_word(c.extra));
}

bool lexicon_view::has_children(lexicon_cursor c) const {
  return (base_ && c.base >= 0 && base_->has_children(c.base)) ||
         (extra_ && c.extra >= 0 && extra_->has_children(c.extra));
}

int32_t lexicon_view::lm_word(lexicon_cursor c) const {
  if (base_ && c.base >= 0 && base_->is_word(c.base) && base_->lm_word(c.base) >= 0) return base_->lm_word(c.base);
  if (extra_ && c.extra >= 0 && extra_->is_word(c.extra)) return extra_->lm_word(c.extra);
  return -1;
}

float lexicon_view::lookahead(lexicon_cursor c) const {
  float best = no_lookahead;
  if (base_ && c.base >= 0) best = std::max(best, base_->lookahead(c.base));
  if (extra_ && c.extra >= 0) best = std::max(best, extra_->lookahead(c.extra));
  return best;
}

bool lexicon_view::contains(std::span<const int32_t> word) const {
  return (base_ && base_->contains(word)) || (extra_ && extra_->contains(word));
}

}  // namespace sluice::moe
