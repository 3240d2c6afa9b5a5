#include "moe/decoder/beam_search_decoder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "moe/decoder/beam_prune.hpp"
#include "moe/decoder/ctc_alignment.hpp"

namespace sluice::moe {

namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();

double log_add(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b == neg_inf) return a;
  return a + std::log1p(std::exp(b - a));
}

}  // namespace

double beam_search_decoder::hypothesis::acoustic() const { return log_add(log_blank, log_token); }

result<beam_search_decoder> beam_search_decoder::create(const token_table& tokens, const decoder_options& opts,
                                                        const arpa_lm* lm, context_graph hotwords) {
  if (auto ok = validate(opts); !ok) return tl::unexpected(ok.error());
  return beam_search_decoder(tokens, opts, lm, std::move(hotwords));
}

beam_search_decoder::beam_search_decoder(const token_table& tokens, const decoder_options& opts, const arpa_lm* lm,
                                         context_graph hotwords)
    : tokens_(&tokens), opts_(opts), lm_(lm), hotwords_(std::move(hotwords)), aligner_(tokens.blank_id(), tokens.size()) {
  start_utterance();
}

void beam_search_decoder::start_utterance() {
  trie_.clear();
  frames_.clear();
  aligner_.reset();
  hypothesis root;
  root.node = prefix_trie::root;
  root.log_blank = 0;  // the empty prefix, certain before any frame
  root.log_token = neg_inf;
  root.context = hotwords_.start();
  root.lm_state = lm_ ? lm_->begin_state() : 0;
  beams_.assign(1, root);
}

result<void> beam_search_decoder::accept(std::span<const float> logits, int32_t n_frames) {
  const int32_t vocab = tokens_->size();
  if (auto ok = check_logits(logits, n_frames, vocab); !ok) return ok;
  row_.resize(static_cast<std::size_t>(vocab));
  for (int32_t t = 0; t < n_frames; ++t) {
    log_softmax(logits.subspan(static_cast<std::size_t>(t) * row_.size(), row_.size()), row_);
    select_tokens(row_, opts_.max_tokens_per_frame, static_cast<float>(opts_.token_min_log_prob), candidates_);
    frames_.append(candidates_);
    advance(candidates_);
  }
  return {};
}

// One frame of the prefix beam search. For hypothesis h (last token l) and candidate token c:
//   blank:      h stays, ending in blank      <- h via any path
//   c == l:     h stays, ending in l          <- h ending in l (the spike continues)
//               h+c, ending in c             <- h ending in blank (a new c needs a blank between)
//   c != l:     h+c, ending in c             <- h via any path
void beam_search_decoder::advance(std::span<const token_log_prob> frame) {
  next_.clear();
  slot_.clear();
  const int32_t blank = tokens_->blank_id();
  for (const hypothesis& h : beams_) {
    const double any = h.acoustic();
    for (const token_log_prob& c : frame) {
      if (c.token == blank) {
        hypothesis& s = next_[same(h)];
        s.log_blank = log_add(s.log_blank, any + c.log_prob);
      } else if (c.token == h.token) {
        const std::size_t stay = same(h);
        next_[stay].log_token = log_add(next_[stay].log_token, h.log_token + c.log_prob);
        hypothesis& e = next_[extended(h, c.token)];
        e.log_token = log_add(e.log_token, h.log_blank + c.log_prob);
      } else {
        hypothesis& e = next_[extended(h, c.token)];
        e.log_token = log_add(e.log_token, any + c.log_prob);
      }
    }
  }
  prune();
}

std::size_t beam_search_decoder::same(const hypothesis& h) {
  auto [index, inserted] = slot_.try_emplace(prefix_trie::key(h.parent, h.token), static_cast<uint32_t>(next_.size()));
  if (inserted) {
    next_.push_back(h);
    next_.back().log_blank = neg_inf;
    next_.back().log_token = neg_inf;
  }
  return *index;
}

std::size_t beam_search_decoder::extended(const hypothesis& h, int32_t token) {
  auto [index, inserted] = slot_.try_emplace(prefix_trie::key(h.node, token), static_cast<uint32_t>(next_.size()));
  if (!inserted) return *index;
  // A prefix's terms depend on the prefix alone, so computing them once per prefix is exact.
  hypothesis e;
  e.parent = h.node;
  e.token = token;
  e.node = trie_.find(h.node, token);
  e.log_blank = neg_inf;
  e.log_token = neg_inf;
  e.lm_state = h.lm_state;
  const context_step hw = hotwords_.step(h.context, token);
  e.context = hw.next;
  e.bonus = h.bonus + hw.delta;
  // A word ends at a <space>, or where a word-start piece begins the next one.
  if (token == tokens_->space_id() || tokens_->starts_word(token)) e.bonus += close_word(h.node, e.lm_state);
  next_.push_back(e);
  return *index;
}

void beam_search_decoder::prune() {
  if (next_.empty()) return;  // only for a frame with no tokens, which select_tokens never makes
  keep_best(next_, opts_.beam_size, opts_.beam_log_threshold, scores_, order_, ranked_);
  beams_.clear();
  for (std::size_t i : order_) {
    hypothesis& h = next_[i];
    if (h.node < 0) h.node = trie_.add(h.parent, h.token);
    beams_.push_back(h);
  }
}

double beam_search_decoder::close_word(int32_t node, int32_t& lm_state) const {
  if (!lm_) return 0;
  word_.clear();
  // The last word: back to the <space> before it, or to its word-start piece.
  for (int32_t n = node; n != prefix_trie::root && trie_.token(n) != tokens_->space_id(); n = trie_.parent(n)) {
    auto piece = tokens_->text(trie_.token(n));
    word_.insert(word_.begin(), piece.begin(), piece.end());
    if (tokens_->starts_word(trie_.token(n))) break;
  }
  if (word_.empty()) return 0;
  const lm_step s = lm_->score(lm_state, word_);
  lm_state = s.next;
  return opts_.lm_weight * s.log_prob + opts_.word_insertion_bonus;
}

double beam_search_decoder::end_bonus(const hypothesis& h) const {
  double bonus = hotwords_.finish(h.context);
  if (lm_) {
    int32_t state = h.lm_state;
    bonus += close_word(h.node, state);
    if (opts_.lm_end_of_sentence) bonus += opts_.lm_weight * lm_->end_of_sentence(state);
  }
  return bonus;
}

decode_result beam_search_decoder::result_of(const hypothesis& h, double score, bool timed) const {
  const std::vector<int32_t> labels = trie_.labels(h.node);
  const frame_timing timing{frame_offset_, opts_.frame_ms};
  if (timed)
    if (auto alignment = aligner_.align(frames_, labels)) return make_result(*alignment, *tokens_, timing, score);
  // Untimed on request; else unreachable: a hypothesis only grows by tokens of the stored frames,
  // so a path exists. Should it ever fail, the words still come out, untimed and with no
  // confidence.
  std::vector<aligned_token> untimed;
  for (int32_t l : labels) untimed.push_back({l, 0, 0, 0.0f});
  return make_result(untimed, *tokens_, timing, score);
}

decode_result beam_search_decoder::partial() const {
  return result_of(beams_.front(), beams_.front().total());
}

decode_result beam_search_decoder::finalize() {
  const auto ranked =
      rank_finals(beams_.size(), [&](std::size_t i) { return beams_[i].total() + end_bonus(beams_[i]); }, neg_inf);
  decode_result r = result_of(beams_[ranked.front().index], ranked.front().score);
  if (opts_.alternatives > 0)
    r.alternatives = n_best(
        ranked, opts_.alternatives, opts_.alternatives_scale, r, [&](std::size_t i) { return result_of(beams_[i], 0, false).text; },
        [&](std::size_t i, double score) { return result_of(beams_[i], score); });
  frame_offset_ += frames_.size();
  start_utterance();
  return r;
}

}  // namespace sluice::moe
