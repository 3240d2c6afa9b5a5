#include "moe/decoder/arpa_lm.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace sluice::moe {

result<arpa_lm> arpa_lm::load(const std::string& path, const arpa_options& opts) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(errc::io, "cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail(errc::io, "cannot read " + path);
  return parse(ss.str(), path, opts);
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
  const int32_t* e = index_.find(key(context, word));
  return e ? *e : -1;
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
  for (int32_t ctx = state;;) {
    if (int32_t id = find(ctx, word); id >= 0) {
      const entry& e = entries_[static_cast<std::size_t>(id)];
      return {backoff + e.log_prob, e.order < order_ ? id : e.suffix};
    }
    // Every valid word id is a unigram, so only an id from elsewhere misses the empty history.
    if (ctx == 0) return {oov_log_prob_, null_state()};
    const entry& c = entries_[static_cast<std::size_t>(ctx)];
    backoff += c.log_backoff;
    ctx = c.suffix;
  }
}

float arpa_lm::end_of_sentence(int32_t state) const {
  return end_id_ < 0 ? 0.0f : score(state, end_id_).log_prob;
}

}  // namespace sluice::moe
