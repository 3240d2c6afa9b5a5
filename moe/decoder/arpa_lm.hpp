#pragma once
/// A word n-gram language model from an ARPA file (as SRILM, KenLM and tools/train/build_lm.py
/// write them), scored with backoff:
///   P(w | h) = p(h w)                      if the n-gram "h w" is listed,
///            = bo(h) * P(w | h minus its first word)   otherwise (bo = 1 when h is not listed).
/// Probabilities are read as log10 and kept as natural logs (ln), which is what score() returns.
///
/// A history is a state: the id of the longest listed n-gram (of order < N) that ends the words
/// seen so far, so a hypothesis carries one int32 instead of its last N-1 words. State 0 is the
/// empty history. Words outside the unigrams score as "<unk>" when the model lists it, else get
/// arpa_options::oov_log10_prob and reset the history.
///
/// Loading validates the file: section order, n-gram counts against \data\, field counts,
/// numbers, words of higher orders being unigrams, every n-gram's context being listed, no
/// duplicates; errors are errc::corrupt / errc::truncated naming "source:line". Read-only after
/// loading; share one model between streams.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/error.hpp"
#include "moe/decoder/flat_map.hpp"

namespace sluice::moe {

struct arpa_options {
  /// log10 probability of a word the model does not know, when it lists no "<unk>".
  float oov_log10_prob = -10.0f;
};

/// The outcome of scoring one word.
struct lm_step {
  float log_prob = 0;  ///< ln P(word | history)
  int32_t next = 0;    ///< the history after the word
};

class arpa_lm {
 public:
  static constexpr std::string_view begin_sentence = "<s>";
  static constexpr std::string_view end_sentence = "</s>";
  static constexpr std::string_view unknown_word = "<unk>";

  /// Parses ARPA text; `source` names it in messages.
  static result<arpa_lm> parse(std::string_view text, std::string_view source, const arpa_options& opts = {});
  static result<arpa_lm> load(const std::string& path, const arpa_options& opts = {});

  /// What load_cached did.
  struct cache_info {
    std::string file;  ///< the binary copy's path ("" without a cache directory)
    bool hit = false;  ///< read from it (else parsed, and written there when possible)
  };
  /// load() through a binary copy of the parsed model kept in `cache_dir` and named by a hash of
  /// the ARPA text (so an edited file gets a new copy): read from there when it is present and
  /// intact (magic, version, source hash, checksum, every id in range), else parsed and written
  /// there (written aside and renamed; a write that fails is skipped; see copy_max_age for
  /// what is removed). The text is read and
  /// hashed either way. `cache_dir` "": load(). The same model either way (tests/moe/lm_cache_test.cpp).
  /// A copy that is read is used where it lies: the model keeps the file mapped and looks its
  /// n-grams up in the copy's own hash table (format 2, since 2026-12-06), so a start neither
  /// rebuilds the table (about a fifth of a start's CPU) nor holds a private copy of it, and
  /// processes that read the same copy share its pages.
  static result<arpa_lm> load_cached(const std::string& path, const std::string& cache_dir,
                                     const arpa_options& opts = {}, cache_info* info = nullptr);
  /// Writing a copy removes the directory's other copies (lm-*.bin) not read for this long;
  /// reading one refreshes its time.
  static constexpr std::chrono::hours copy_max_age{24 * 30};
  /// The binary form load_cached keeps; `source_hash` identifies the text it was parsed from.
  std::string to_binary(uint64_t source_hash) const;
  /// Reads to_binary's bytes back; errc::corrupt naming `source` when they are not that (or were
  /// made from another text: `source_hash` differs). `opts` as for parse(). The model keeps a
  /// copy of the bytes.
  static result<arpa_lm> from_binary(std::string_view bytes, uint64_t source_hash, std::string_view source,
                                     const arpa_options& opts = {});
  /// The same from bytes the model may keep and use where they lie (`keep` owns them; a
  /// mapping of the file, say); copied first when they are not 8-byte aligned.
  static result<arpa_lm> from_binary(std::shared_ptr<const void> keep, std::span<const std::byte> bytes,
                                     uint64_t source_hash, std::string_view source, const arpa_options& opts = {});
  /// Whether the n-gram tables are those of a binary copy, used where they lie.
  bool uses_binary_in_place() const { return keep_ != nullptr; }
  /// The hash of ARPA text load_cached names copies by.
  static uint64_t text_hash(std::string_view text);

  int32_t order() const { return order_; }
  /// Number of n-grams of order n (1 .. order()), as announced in \data\.
  int64_t ngram_count(int32_t n) const;

  int32_t vocab_size() const { return static_cast<int32_t>(words_.size()); }
  std::string_view word(int32_t id) const { return words_[static_cast<std::size_t>(id)]; }
  /// The word's id, or -1 when it is not a unigram.
  int32_t word_id(std::string_view w) const;

  /// The empty history.
  int32_t null_state() const { return 0; }
  /// The history at the start of a sentence ("<s>"; the empty history when the model lacks it).
  int32_t begin_state() const { return begin_state_; }

  /// ln P(word | state) and the state after it; word -1 is an unknown word.
  lm_step score(int32_t state, int32_t word) const;
  lm_step score(int32_t state, std::string_view word) const { return score(state, word_id(word)); }
  /// At least ln P(word | h) for every history h (word -1: an unknown word): the best listed
  /// n-gram ending in the word plus the largest backoff sum a history can add on the way down
  /// (0 when every backoff weight is at most 1, as in a model made by SRILM or KenLM). The
  /// lexicon decoder leaves a word end it cannot keep even with this unasked.
  float max_log_prob(int32_t word) const {
    if (word < 0) return unk_id_ < 0 ? oov_log_prob_ : word_bound_[static_cast<std::size_t>(unk_id_)];
    return word_bound_[static_cast<std::size_t>(word)];
  }
  /// ln P(</s> | state); 0 when the model has no "</s>".
  float end_of_sentence(int32_t state) const;

  /// One score() question and its answer.
  struct query {
    int32_t state = 0;
    int32_t word = -1;
    lm_step answer;
  };
  /// score(q.state, q.word) into each q.answer, the same values as one call each, with the
  /// n-gram table reads of all the queries overlapped: a round prefetches every open query's
  /// slot, then reads them; a query whose n-gram is not listed backs off to the next round.
  /// A lookup in the table is a cache miss (megabytes, read at random), so one at a time the
  /// decoder waits for memory once per query per backoff level. `scratch` is reused memory.
  void score_all(std::span<query> queries, std::vector<uint32_t>& scratch) const;

 private:
  struct entry {
    float log_prob = 0;     ///< ln p(n-gram)
    float log_backoff = 0;  ///< ln bo(n-gram) as a history
    int32_t context = 0;    ///< entry of the first n-1 words (0: the empty history)
    int32_t word = -1;      ///< last word
    int32_t suffix = 0;     ///< entry of the longest listed proper suffix (0: the empty one)
    int32_t order = 0;
  };
  /// A listed n-gram of order > 1: its entry, and what score() returns when it is found, kept
  /// beside the key so a hit reads one slot instead of the slot and then the entry (score()'s
  /// random reads in these tables were a quarter of the lexicon decoder's time).
  struct ngram_ref {
    int32_t entry = -1;
    lm_step step;
  };
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  friend class arpa_reader;

  static uint64_t key(int32_t context, int32_t word) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(context)) << 32) | static_cast<uint32_t>(word);
  }
  int32_t find(int32_t context, int32_t word) const;
  /// The n-gram entries and the index: the parsed ones, or a binary copy's where it lies.
  std::span<const entry> entry_table() const { return keep_ ? kept_entries_ : std::span<const entry>(entries_); }
  const ngram_ref* find_ref(uint64_t k) const { return keep_ ? kept_index_.find(k) : index_.find(k); }
  void prefetch_ref(uint64_t k) const {
    if (keep_) kept_index_.prefetch(k);
    else index_.prefetch(k);
  }
  /// What score() returns when it finds entry `id`: its ln p and the state after it.
  lm_step step_of(int32_t id) const;
  /// unigram_step_ from unigram_entry_ (after loading).
  void index_unigram_steps();
  /// word_bound_ (after loading, oov_log_prob_ and unigram_step_ set).
  void index_word_bounds();
  /// The answer at the empty history, `backoff` summed on the way there (the floor when `word`
  /// is not listed).
  lm_step unigram(int32_t word, float backoff) const;
  /// Entry of words[first, last), -1 when it (or one of its prefixes) is not listed.
  int32_t find_sequence(const std::vector<int32_t>& words, std::size_t first) const;

  int32_t order_ = 0;
  std::vector<int64_t> counts_;
  std::vector<std::string> words_;
  std::unordered_map<std::string, int32_t, string_hash, std::equal_to<>> word_ids_;
  std::vector<entry> entries_{entry{}};          ///< entries_[0] is the empty history
  flat_u64_map<ngram_ref> index_;                ///< key(context, word) -> n-gram, context > 0
  /// A binary copy's bytes when the tables below are used where they lie in it (else null).
  std::shared_ptr<const void> keep_;
  std::span<const entry> kept_entries_;          ///< entries_, in the copy
  frozen_u64_map<ngram_ref> kept_index_;         ///< index_, in the copy
  std::vector<int32_t> unigram_entry_;           ///< word -> entry of the unigram (every word has one)
  std::vector<lm_step> unigram_step_;            ///< word -> its unigram's step (next -1: not listed)
  std::vector<float> word_bound_;                ///< word -> max_log_prob(word)
  int32_t begin_state_ = 0;
  int32_t unk_id_ = -1;
  int32_t end_id_ = -1;
  float oov_log_prob_ = 0;                       ///< ln, for unknown words when there is no <unk>
};

}  // namespace sluice::moe
