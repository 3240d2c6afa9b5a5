// The ARPA text parser behind arpa_lm::parse(): one pass over the lines, validating as it goes so
// every error names the line that caused it.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

#include "moe/decoder/arpa_lm.hpp"

namespace sluice::moe {

namespace {

constexpr std::string_view data_header = "\\data\\";
constexpr std::string_view end_marker = "\\end\\";
constexpr std::string_view ngram_prefix = "ngram ";
const float ln_10 = std::numbers::ln10_v<float>;

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

void split(std::string_view s, std::vector<std::string_view>& out) {
  out.clear();
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_blank(s[i])) ++i;
    const std::size_t start = i;
    while (i < s.size() && !is_blank(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
}

bool parse_float(std::string_view s, float& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(v);
}

template <class I>
bool parse_int(std::string_view s, I& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string section_header(int32_t n) {
  // Built piecewise: GCC 12 warns falsely (-Wrestrict) on "\\" + std::to_string(n).
  std::string s(1, '\\');
  s += std::to_string(n);
  s += "-grams:";
  return s;
}

}  // namespace

class arpa_reader {
 public:
  arpa_reader(std::string_view text, std::string_view source, arpa_lm& lm) : text_(text), source_(source), lm_(lm) {}

  result<void> read() {
    if (auto ok = read_counts(); !ok) return ok;
    for (int32_t n = 1; n <= lm_.order_; ++n)
      if (auto ok = read_section(n); !ok) return ok;
    if (line_ != end_marker) return bad(errc::corrupt, "expected '\\end\\', found '" + std::string(line_) + "'");
    return {};
  }

 private:
  // Next non-blank line into line_ (trimmed); false at the end of the text.
  bool next_line() {
    while (pos_ < text_.size()) {
      std::size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      line_ = trim(text_.substr(pos_, end - pos_));
      pos_ = end + 1;
      ++line_no_;
      if (!line_.empty()) return true;
    }
    line_ = {};
    return false;
  }

  tl::unexpected<error> bad(errc code, const std::string& what) const {
    return fail(code, std::string(source_) + ":" + std::to_string(line_no_) + ": " + what);
  }
  tl::unexpected<error> truncated(const std::string& what) const {
    return fail(errc::truncated, std::string(source_) + ": ends " + what);
  }

  result<void> read_counts() {
    do {
      if (!next_line()) return fail(errc::corrupt, std::string(source_) + ": no \\data\\ section");
    } while (line_ != data_header);
    const int64_t data_line = line_no_;
    int64_t total = 0;
    while (next_line() && line_.starts_with(ngram_prefix)) {
      std::string_view spec = trim(line_.substr(ngram_prefix.size()));
      const std::size_t eq = spec.find('=');
      int32_t n = 0;
      int64_t count = 0;
      if (eq == std::string_view::npos || !parse_int(trim(spec.substr(0, eq)), n) ||
          !parse_int(trim(spec.substr(eq + 1)), count) || count < 0)
        return bad(errc::corrupt, "expected 'ngram N=count', found '" + std::string(line_) + "'");
      if (n != lm_.order_ + 1)
        return bad(errc::corrupt, "expected the count of " + std::to_string(lm_.order_ + 1) + "-grams, found " +
                                      std::to_string(n) + "-grams");
      lm_.counts_.push_back(count);
      lm_.order_ = n;
      total += count;
    }
    if (line_.empty()) return truncated("inside \\data\\ (line " + std::to_string(data_line) + ")");
    if (lm_.order_ == 0) return bad(errc::corrupt, "\\data\\ announces no n-gram counts");
    if (total >= std::numeric_limits<int32_t>::max())
      return bad(errc::unsupported, std::to_string(total) + " n-grams are more than this loader indexes");
    // The counts are the file's claim, checked only as the n-grams are read: room is reserved for
    // no more n-grams than the text has lines (an n-gram line is at least 4 bytes: "p\tw\n").
    const auto room = static_cast<std::size_t>(std::min<int64_t>(total, static_cast<int64_t>(text_.size() / 4)));
    lm_.entries_.reserve(room + 1);
    lm_.index_.reserve(room);
    lm_.words_.reserve(static_cast<std::size_t>(lm_.counts_[0]));
    return {};
  }

  result<void> read_section(int32_t n) {
    if (line_ != section_header(n))
      return bad(errc::corrupt, "expected '" + section_header(n) + "', found '" + std::string(line_) + "'");
    const int64_t header_line = line_no_;
    const int64_t announced = lm_.counts_[static_cast<std::size_t>(n - 1)];
    int64_t listed = 0;
    while (true) {
      if (!next_line())
        return truncated("inside " + section_header(n) + " (line " + std::to_string(header_line) + ") without \\end\\");
      if (line_.front() == '\\') break;
      if (++listed > announced)
        return bad(errc::corrupt, "more " + std::to_string(n) + "-grams than the " + std::to_string(announced) +
                                      " announced in \\data\\");
      if (auto ok = read_entry(n); !ok) return ok;
    }
    if (listed < announced)
      return bad(errc::corrupt, section_header(n) + " (line " + std::to_string(header_line) + ") lists " +
                                    std::to_string(listed) + " n-grams, \\data\\ announced " + std::to_string(announced));
    return {};
  }

  result<void> read_entry(int32_t n) {
    split(line_, fields_);
    const bool highest = n == lm_.order_;
    const auto nf = static_cast<int32_t>(fields_.size());
    if (highest && nf == n + 2)
      return bad(errc::corrupt, std::to_string(n) + "-grams are the highest order and take no backoff");
    if (nf != n + 1 && nf != n + 2)
      return bad(errc::corrupt, "a " + std::to_string(n) + "-gram line holds a log10 probability, " + std::to_string(n) +
                                    " word(s) and an optional backoff; found " + std::to_string(nf) + " fields");
    float log10_prob = 0, log10_backoff = 0;
    if (!parse_float(fields_[0], log10_prob))
      return bad(errc::corrupt, "bad log10 probability '" + std::string(fields_[0]) + "'");
    if (log10_prob > 0)
      return bad(errc::corrupt, "log10 probability " + std::string(fields_[0]) + " is above 0");
    if (nf == n + 2 && !parse_float(fields_[static_cast<std::size_t>(n + 1)], log10_backoff))
      return bad(errc::corrupt, "bad backoff '" + std::string(fields_[static_cast<std::size_t>(n + 1)]) + "'");

    // Files list n-grams sorted by their words (SRILM, KenLM and build_lm.py do), so a line
    // mostly repeats the previous line's leading words and context: those are taken from the
    // previous line instead of being looked up again (the lookups were most of the load time).
    const bool follows = n > 1 && prev_order_ == n;
    ids_.clear();
    for (int32_t i = 1; i <= n; ++i) {
      std::string_view w = fields_[static_cast<std::size_t>(i)];
      const auto at = static_cast<std::size_t>(i - 1);
      int32_t id = follows && prev_words_[at] == w ? prev_ids_[at] : lm_.word_id(w);
      if (n == 1) {
        if (id >= 0) return bad(errc::corrupt, "duplicate 1-gram '" + std::string(w) + "'");
        id = static_cast<int32_t>(lm_.words_.size());
        lm_.words_.emplace_back(w);
        lm_.word_ids_.emplace(lm_.words_.back(), id);
      } else if (id < 0) {
        return bad(errc::corrupt, "word '" + std::string(w) + "' is not among the 1-grams");
      }
      ids_.push_back(id);
    }
    int32_t context = 0;
    if (follows && std::equal(ids_.begin(), ids_.end() - 1, prev_ids_.begin())) {
      context = prev_context_;
    } else {
      for (int32_t i = 0; i + 1 < n; ++i) {
        context = lm_.find(context, ids_[static_cast<std::size_t>(i)]);
        if (context < 0)
          return bad(errc::corrupt, "the context '" + joined(n - 1) + "' of " + std::to_string(n) + "-gram '" +
                                        joined(n) + "' is not listed as a " + std::to_string(n - 1) + "-gram");
      }
    }
    // The longest listed proper suffix (lower orders are all read by now): the history to back
    // off to when this n-gram is the context, and the next state when it is of the full order.
    int32_t suffix = 0;
    for (std::size_t first = 1; first < ids_.size(); ++first)
      if (int32_t s = lm_.find_sequence(ids_, first); s > 0) {
        suffix = s;
        break;
      }
    const auto id = static_cast<int32_t>(lm_.entries_.size());
    lm_.entries_.push_back({log10_prob * ln_10, log10_backoff * ln_10, context, ids_.back(), suffix, n});
    if (context == 0) {
      // Unigrams (a duplicate word was refused above).
      const auto w = static_cast<std::size_t>(ids_.back());
      if (lm_.unigram_entry_.size() <= w) lm_.unigram_entry_.resize(w + 1, -1);
      lm_.unigram_entry_[w] = id;
    } else if (!lm_.index_.try_emplace(arpa_lm::key(context, ids_.back()), {id, lm_.step_of(id)}).second) {
      return bad(errc::corrupt, "duplicate " + std::to_string(n) + "-gram '" + joined(n) + "'");
    }
    prev_order_ = n;
    prev_context_ = context;
    prev_ids_.assign(ids_.begin(), ids_.end());
    prev_words_.assign(fields_.begin() + 1, fields_.begin() + 1 + n);
    return {};
  }

  std::string joined(int32_t n_words) const {
    std::string s;
    for (int32_t i = 1; i <= n_words; ++i) {
      if (i > 1) s += ' ';
      s += fields_[static_cast<std::size_t>(i)];
    }
    return s;
  }

  std::string_view text_, source_;
  arpa_lm& lm_;
  std::size_t pos_ = 0;
  std::string_view line_;
  int64_t line_no_ = 0;
  std::vector<std::string_view> fields_;
  std::vector<int32_t> ids_;
  // The previous n-gram line: its order, words (views into text_), word ids and context entry.
  int32_t prev_order_ = 0;
  std::vector<std::string_view> prev_words_;
  std::vector<int32_t> prev_ids_;
  int32_t prev_context_ = 0;
};

result<arpa_lm> arpa_lm::parse(std::string_view text, std::string_view source, const arpa_options& opts) {
  if (!std::isfinite(opts.oov_log10_prob) || opts.oov_log10_prob > 0)
    return fail(errc::invalid_argument, "arpa: oov_log10_prob must be a finite log10 probability <= 0");
  arpa_lm lm;
  arpa_reader reader(text, source, lm);
  if (auto ok = reader.read(); !ok) return tl::unexpected(ok.error());
  lm.oov_log_prob_ = opts.oov_log10_prob * ln_10;
  lm.unk_id_ = lm.word_id(unknown_word);
  lm.end_id_ = lm.word_id(end_sentence);
  if (int32_t s = lm.word_id(begin_sentence); s >= 0) lm.begin_state_ = lm.find(0, s);
  lm.index_unigram_steps();
  lm.index_word_bounds();
  return lm;
}

}  // namespace sluice::moe
