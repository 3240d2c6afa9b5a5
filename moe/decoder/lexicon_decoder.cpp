#include "moe/decoder/lexicon_decoder.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>

#include "moe/decoder/beam_prune.hpp"
#include "moe/decoder/ctc_alignment.hpp"

namespace sluice::moe {

namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();
// The LM memo is dropped when it grows past this many entries (384 KiB of table),
// so a decoder's memory stays bounded however long the utterance.
constexpr std::size_t max_lm_cache_entries = 1 << 13;
// A token this far (ln) below the frame's best extends no hypothesis. CTC posteriors are peaky:
// such a token is e^-8 ~ 3e-4 as likely as the frame's winner and its extensions are pruned
// anyway, but each costs trie, lexicon and LM lookups; skipping them halves the decoder's time.
constexpr float token_beam = 8.0f;

// A word's LM term, as a probability at most 1: a proper LM never answers above ln 1 = 0, but a
// backoff weight above 1 in a hand-made ARPA file can; the extension floor relies on it.
float lm_log_prob(const lm_step& step) { return std::min(0.0f, step.log_prob); }

// The most the LM term of ending `lm_word` can add (weight >= 0): weight * ln P at most the LM's
// bound for the word (arpa_lm::max_log_prob) and at most ln 1 (lm_log_prob).
double lm_term_bound(const arpa_lm* lm, double weight, int32_t lm_word) {
  // An id this LM does not have (a lexicon built with another LM) gets ln 1.
  if (!lm || lm_word >= lm->vocab_size()) return 0.0;
  return weight * std::min(0.0f, lm->max_log_prob(lm_word));
}

double log_add(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b == neg_inf) return a;
  return a + std::log1p(std::exp(b - a));
}

}  // namespace

double lexicon_decoder::hypothesis::acoustic() const { return log_add(log_blank, log_token); }

result<lexicon_decoder> lexicon_decoder::create(const token_table& tokens, const decoder_options& opts,
                                                lexicon_view lexicon, const arpa_lm* lm, context_graph hotwords) {
  if (auto ok = validate(opts); !ok) return tl::unexpected(ok.error());
  return lexicon_decoder(tokens, opts, lexicon, lm, std::move(hotwords));
}

lexicon_decoder::lexicon_decoder(const token_table& tokens, const decoder_options& opts, lexicon_view lexicon,
                                 const arpa_lm* lm, context_graph hotwords)
    : tokens_(&tokens),
      opts_(opts),
      lexicon_(lexicon),
      lm_(lm),
      hotwords_(std::move(hotwords)),
      vocab_(tokens.size()),
      aligner_(tokens.blank_id(), tokens.size(), tokens.space_id()) {
  // For reach(): the most a first letter's look-ahead can be.
  root_lookahead_ = opts_.lexicon_lm_weight * lexicon_.lookahead(lexicon_cursor{});
  start_utterance();
}

void lexicon_decoder::start_utterance() {
  trie_.clear();
  frames_.clear();
  aligner_.reset();
  hypothesis root;
  root.node = prefix_trie::root;
  root.log_blank = 0;
  root.log_token = neg_inf;
  root.ac = root.acoustic();
  root.context = hotwords_.start();
  root.lm_state = lm_ ? lm_->begin_state() : 0;
  root.future = future_key(root);
  beams_.assign(1, root);
}

result<void> lexicon_decoder::accept(std::span<const float> logits, int32_t n_frames) {
  if (auto ok = check_logits(logits, n_frames, vocab_); !ok) return ok;
  row_.resize(static_cast<std::size_t>(vocab_));
  for (int32_t t = 0; t < n_frames; ++t) {
    log_softmax(logits.subspan(static_cast<std::size_t>(t) * row_.size(), row_.size()), row_);
    select_tokens(row_, opts_.max_tokens_per_frame, static_cast<float>(opts_.token_min_log_prob), candidates_);
    frames_.append(candidates_);
    advance(candidates_);
  }
  return {};
}

lexicon_decoder::route lexicon_decoder::route_of(int32_t token, const hypothesis& h) const {
  const int32_t space = tokens_->space_id();
  // A <space> between words is read as a blank: it adds its probability to the same hypothesis
  // instead of making a second one that differs only by the <space> (or by two of them), which
  // would hold a beam slot for the same words.
  if (token == tokens_->blank_id() || (token == space && h.where == place::boundary)) return route::as_blank;
  if (token == space) return route::none;  // a word in progress, vocabulary or OOV, takes no <space>
  return token == h.token ? route::repeat : route::extend;
}

// The CTC recursion is beam_search_decoder's; only what a token may extend a hypothesis into
// differs (extend()).
void lexicon_decoder::advance(std::span<const token_log_prob> frame) {
  next_.clear();
  slot_.clear();
  const int32_t blank = tokens_->blank_id();
  // select_tokens lists the frame's tokens best first.
  const float token_floor = frame.empty() ? 0.0f : frame.front().log_prob - token_beam;
  if (!frame.empty() && frame.front().token == blank && (frame.size() == 1 || frame[1].log_prob < token_floor)) {
    // Only blank is within reach: every hypothesis goes on as it is, one frame longer. These are
    // the candidates and scores the general step below would give (each hypothesis its own slot,
    // one common term added to every acoustic score), in the order it would sort them into up to
    // rounding: two totals within a rounding error of each other keep their previous order. The
    // choice depends on the frame alone, so chunking still cannot change the result.
    const double b = frame.front().log_prob;
    for (hypothesis& h : beams_) {
      h.log_blank = h.ac + b;
      h.log_token = neg_inf;
      h.ac = h.log_blank;  // = acoustic(): log_add(x, -inf) is x
    }
    return;
  }
  start_floor();
  // The frame's tokens within reach by id (-inf: not), for the own continuations.
  constexpr float none = -std::numeric_limits<float>::infinity();
  if (token_lp_.size() != static_cast<std::size_t>(vocab_)) token_lp_.assign(static_cast<std::size_t>(vocab_), none);
  for (const token_log_prob& c : frame) {
    if (c.log_prob < token_floor) break;
    token_lp_[static_cast<std::size_t>(c.token)] = c.log_prob;
  }
  const auto lp_of = [&](int32_t token) {
    return token < 0 ? none : token_lp_[static_cast<std::size_t>(token)];
  };
  const int32_t space = tokens_->space_id();
  const float blank_lp = lp_of(blank);
  // First every kept hypothesis' own continuation (same labels): the blank, and a <space>
  // between words, after any of its paths; its last token again after a path ending in it
  // (route_of(): the tokens read as_blank or as a repeat; a log-add of two terms is the same in
  // either order, so the order the frame lists them in does not matter).
  for (const hypothesis& h : beams_) {
    const double any = h.ac;
    const float space_lp = h.where == place::boundary && space != blank ? lp_of(space) : none;
    const float repeat_lp = h.token != space ? lp_of(h.token) : none;
    if (blank_lp == none && space_lp == none && repeat_lp == none) continue;
    const std::size_t own = same(h);
    hypothesis& o = next_[own];
    if (blank_lp != none) o.log_blank = log_add(o.log_blank, any + blank_lp);
    if (space_lp != none) o.log_blank = log_add(o.log_blank, any + space_lp);
    if (repeat_lp != none) o.log_token = log_add(o.log_token, h.log_token + repeat_lp);
    o.ac = o.acoustic();
    // Later mass only adds to it (from h's parent's extension, when the parent is kept too).
    if (tracking_) count_future(h.future, o.total());
  }
  for (const token_log_prob& c : frame) {
    if (c.log_prob < token_floor) break;
    token_lp_[static_cast<std::size_t>(c.token)] = none;
  }
  // Then the extensions: a new token after the blank end of a path of h ending in its last
  // token, after any path of h for another token.
  for (const hypothesis& h : beams_) {
    const double any = h.ac;
    // An extension of h by a token scores at most its acoustic term + h's settled terms + what
    // its readings may add (reach()), unless a reading of it is some kept hypothesis' own
    // continuation (h is that one's parent, the token its last): then it adds to that, and
    // must be made.
    const bool parent = !tracking_ || is_parent_.find(static_cast<uint32_t>(h.node));
    const double most = tracking_ ? h.bonus + reach(h) : 0.0;
    for (const token_log_prob& c : frame) {
      if (c.log_prob < token_floor) break;
      const route r = route_of(c.token, h);
      if (r != route::repeat && r != route::extend) continue;
      const double p = (r == route::repeat ? h.log_blank : any) + c.log_prob;
      const bool guarded = parent && (!tracking_ || child_token_.find(prefix_trie::key(h.node, c.token)));
      if (!guarded && p + most < floor_) {
        ++skipped_;
        continue;
      }
      extend(h, c.token, p, guarded);
    }
  }
  score_lm_words();
  if (next_.empty()) return;
  recombine();  // fills scores_
  // Keep the best lexicon_beam_size (ties: the earlier candidate, so chunking cannot matter)
  // within beam_log_threshold of the best.
  // None below the floor can be (floor_ is -inf without skipping).
  keep_best_scored(scores_, opts_.lexicon_beam_size, opts_.beam_log_threshold, order_, ranked_, floor_);
  beams_.clear();
  for (std::size_t i : order_) {
    hypothesis& h = next_[i];
    if (h.node < 0) h.node = trie_.add(h.parent, h.label);
    beams_.push_back(h);
  }
}

// The most that extend() adds to h's settled terms in any reading of any token (LM terms <= 0
// with a weight >= 0, as while tracking_): a letter of a vocabulary word its look-ahead, which
// only falls along the word (the best word at or below a trie node); a word end the word bonus;
// an OOV letter its penalties (and the word bonus if it ends the word).
double lexicon_decoder::reach(const hypothesis& h) const {
  const double word_bonus = opts_.lexicon_word_bonus, oov_end = std::max(0.0, word_bonus);
  switch (h.where) {
    case place::in_word: return std::max(h.lookahead, word_bonus);
    case place::in_oov: return -opts_.oov_letter_penalty + oov_end;
    case place::boundary: break;
  }
  return std::max({root_lookahead_, word_bonus, -opts_.oov_penalty - opts_.oov_letter_penalty + oov_end});
}

// The floor: a score below which no candidate of this frame can be among the lexicon_beam_size
// kept, or -inf. Candidates with different futures (same_future) are never recombined into one,
// so if beam-many candidates of different futures are each known to end the frame with a total
// >= some bound, the beam-th best of those bounds is a floor: a candidate below it is pruned
// whatever else happens. Bounds are counted as candidates are made, own continuations first:
//  - each kept hypothesis h goes on into its own slot (same labels, so h's future) with what
//    this frame gives it there, made first in advance(): its total then is a bound (more mass
//    may join that slot later: from h's parent's extension when the parent is kept too). A
//    hypothesis that this frame does not continue (no token it reads goes to its own slot)
//    gives none;
//  - an extension once made: its total then (its acoustic term, settled terms and look-ahead) can
//    only grow, since later mass only log-adds to it; not one whose LM term is still queued
//    (score_lm_words() lowers its total).
// Each future counts once (by its recombination key: on a hash collision the second is not
// counted, which only lowers the floor), and only the beam-many best bounds are kept, so the
// floor rises through the frame; beams_ is best first, so the best extensions come first.
// Skipping a candidate below it changes nothing - the output stays the same bit for bit
// (tests/moe/decoder_lexicon_test.cpp compares every frame's kept hypotheses) - provided its score
// is final when it is made: a candidate's slot is (its parent's node, label) and only its parent
// makes it, once, except where the slot is some kept hypothesis' own continuation (its parent
// is kept too, and the token is its last): advance() does not skip such a token of such a
// parent, and extend() adds its mass to the own continuation. So slot_ holds only the own
// continuations. A margin covers rounding. Off with hotwords (their steps may add score) or a
// negative LM weight.
void lexicon_decoder::start_floor() {
  is_parent_.clear();
  counted_.clear();
  floor_heap_.clear();
  floor_ = neg_inf;
  tracking_ = skip_hopeless_ && hotwords_.empty() && opts_.lexicon_lm_weight >= 0;
  if (!tracking_) return;
  child_token_.clear();
  for (const hypothesis& h : beams_) {
    is_parent_.try_emplace(static_cast<uint32_t>(h.parent), 1);
    child_token_.try_emplace(prefix_trie::key(h.parent, h.token), 1);
  }
}

void lexicon_decoder::count_future(uint64_t key, double bound) {
  const auto beam = static_cast<std::size_t>(opts_.lexicon_beam_size);
  const auto lower = std::greater<>{};  // a min-heap: front() is the lowest counted bound
  if (floor_heap_.size() == beam && bound <= floor_heap_.front()) return;
  if (!counted_.try_emplace(key, 1).second) return;
  floor_heap_.push_back(bound);
  std::push_heap(floor_heap_.begin(), floor_heap_.end(), lower);
  if (floor_heap_.size() > beam) {
    std::pop_heap(floor_heap_.begin(), floor_heap_.end(), lower);
    floor_heap_.pop_back();
  }
  if (floor_heap_.size() == beam) {
    const double lowest = floor_heap_.front();
    floor_ = lowest - (1e-9 + 1e-9 * std::abs(lowest));
  }
}

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

}  // namespace

// Two candidates whose futures score alike: the same LM state, place, word being spelled, hotword
// state and last token (what CTC's repeat rule looks at). Their words differ only where the LM
// no longer sees them.
bool lexicon_decoder::same_future(const hypothesis& a, const hypothesis& b) {
  return a.lm_state == b.lm_state && a.where == b.where && a.lex == b.lex && a.token == b.token &&
         a.context == b.context;
}

uint64_t lexicon_decoder::future_key(const hypothesis& h) {
  uint64_t key = mix(static_cast<uint32_t>(h.lm_state), static_cast<uint32_t>(h.token));
  key = mix(key, (static_cast<uint64_t>(static_cast<uint32_t>(h.lex.base)) << 32) | static_cast<uint32_t>(h.lex.extra));
  uint32_t pending = 0;
  static_assert(sizeof pending == sizeof h.context.pending);
  std::memcpy(&pending, &h.context.pending, sizeof pending);
  key = mix(key, (static_cast<uint64_t>(static_cast<uint32_t>(h.context.node)) << 32) | pending);
  return mix(key, static_cast<uint64_t>(h.where));
}

void lexicon_decoder::recombine() {
  future_.clear();
  scores_.resize(next_.size());
  for (std::size_t i = 0; i < next_.size(); ++i) {
    hypothesis& h = next_[i];
    scores_[i] = h.total();
    auto [slot, inserted] = future_.try_emplace(h.future, static_cast<uint32_t>(i));
    if (inserted) continue;
    const std::size_t j = *slot;
    if (!same_future(next_[j], h)) continue;  // a hash collision: both stay
    // The lower total can never overtake the higher one (up to how each splits its acoustic
    // score between blank and token ends): it is dropped. Ties keep the earlier candidate.
    if (scores_[i] > scores_[j]) {
      scores_[j] = neg_inf;
      *slot = static_cast<uint32_t>(i);
    } else {
      scores_[i] = neg_inf;
    }
  }
}

std::size_t lexicon_decoder::same(const hypothesis& h) {
  auto [index, inserted] = slot_.try_emplace(prefix_trie::key(h.parent, h.label), static_cast<uint32_t>(next_.size()));
  if (inserted) {
    next_.push_back(h);
    next_.back().log_blank = neg_inf;
    next_.back().log_token = neg_inf;
  }
  return *index;
}

void lexicon_decoder::extend(const hypothesis& h, int32_t token, double p, bool guarded) {
  const int32_t space = tokens_->space_id();
  const double w = opts_.lexicon_lm_weight;
  // upper: at least the reading's total once made (any LM answer, which is <= 0); below the
  // floor it is not made (only when tracking_: floor_ is -inf otherwise).
  auto add = [&](kind k, double upper, auto&& fill) {
    const int32_t label = token + vocab_ * static_cast<int32_t>(k);
    // The slot (h, label) may be a kept hypothesis' own continuation, made first (only when
    // `guarded`); else it is new: h is its only maker, once a frame (one label per token), so
    // slot_ need not hold it.
    if (guarded)
      if (const uint32_t* own = slot_.find(prefix_trie::key(h.node, label))) {
        hypothesis& e = next_[*own];
        e.log_token = log_add(e.log_token, p);
        e.ac = e.acoustic();
        return;
      }
    if (upper < floor_) {
      ++skipped_;
      return;
    }
    const std::size_t queued = pending_lm_.size();
    hypothesis e;
    e.parent = h.node;
    e.label = label;
    e.token = token;
    e.node = -1;  // found or made by trie_.add if it survives the frame
    e.log_blank = neg_inf;
    e.log_token = p;
    e.ac = p;  // = acoustic()
    e.bonus = h.bonus;
    e.context = h.context;
    e.lm_state = h.lm_state;
    fill(e);
    // A word end whose LM term the memo knew is exact now; one still waiting for it was
    // checked with `upper` already.
    const bool waits = pending_lm_.size() > queued;
    const double total = e.total();
    if (!waits && total < floor_) {
      ++skipped_;
      return;
    }
    if (!waits) e.future = future_key(e);  // else when its LM state is known (score_lm_words)
    next_.push_back(e);
    if (tracking_ && !waits) count_future(e.future, total);
  };
  auto step_hotwords = [&](hypothesis& e, int32_t t) {
    const context_step s = hotwords_.step(e.context, t);
    e.context = s.next;
    e.bonus += s.delta;
  };
  // A word end steps a <space> through the hotword graph, so hotwords match whole words. The
  // LM's term comes from the memo or, when the memo lacks it, from score_lm_words() once the
  // frame's every extension is made (e is next_'s next element: `add` pushes it after fill).
  auto end_word = [&](hypothesis& e, int32_t lm_word) {
    const double before = e.bonus;
    const bool scored = close_word(lm_word, e.lm_state, e.bonus);
    double delta = 0;
    if (space >= 0) {
      const context_step s = hotwords_.step(e.context, space);
      e.context = s.next;
      delta = s.delta;
    }
    if (scored)
      e.bonus += delta;
    else
      pending_lm_.push_back({static_cast<uint32_t>(next_.size()), before, delta});
    e.where = place::boundary;
    e.lex = {};
    e.lookahead = 0;
  };

  // Word pieces: a word-start piece only at a boundary, any other piece only inside a word (every
  // vocabulary word is spelled from its word-start piece; an OOV word is a word-start piece and
  // the pieces after it). So the model's word marks are kept, and the vocabulary decides spelling.
  if (tokens_->pieces() && tokens_->starts_word(token) != (h.where == place::boundary)) return;
  // The word spelled so far plus this letter, in the vocabulary's trie (dead when off it); OOV
  // words track it too, to know when they spell a vocabulary word.
  const lexicon_view::walked step = lexicon_.walk(h.where == place::boundary ? lexicon_cursor{} : h.lex, token);
  const lexicon_cursor next = step.at;
  const double base = p + h.bonus, word_bonus = opts_.lexicon_word_bonus;
  if (h.where != place::in_oov && !next.dead()) {
    if (step.has_children) {
      const double lookahead = w * step.lookahead;
      add(kind::letter, base + lookahead, [&](hypothesis& e) {
        step_hotwords(e, token);
        e.where = place::in_word;
        e.lex = next;
        e.lookahead = lookahead;
      });
    }
    if (step.is_word)
      add(kind::word_end, base + word_bonus + lm_term_bound(lm_, w, step.lm_word), [&](hypothesis& e) {
        step_hotwords(e, token);
        end_word(e, step.lm_word);
      });
  }
  if (h.where == place::in_word) return;  // an OOV word starts only at a word start
  // The OOV path: this letter continues (or starts) an OOV word, or ends it, unless the word it
  // ends is a vocabulary word (that reading exists already, without the penalty).
  const double entry = (h.where == place::boundary ? -opts_.oov_penalty : 0.0) - opts_.oov_letter_penalty;
  add(kind::oov_letter, p + (h.bonus + entry), [&](hypothesis& e) {
    e.bonus += entry;
    step_hotwords(e, token);
    e.where = place::in_oov;
    e.lex = next;
  });
  if (step.is_word) return;
  add(kind::oov_end, p + (h.bonus + entry) + word_bonus + lm_term_bound(lm_, w, -1), [&](hypothesis& e) {
    e.bonus += entry;
    step_hotwords(e, token);
    end_word(e, -1);
  });
}

bool lexicon_decoder::close_word(int32_t lm_word, int32_t& lm_state, double& bonus) {
  if (!lm_) {
    bonus += opts_.lexicon_word_bonus;
    return true;
  }
  // Every frame asks for the same few (history, word) pairs again; the memo saves the backoff
  // walk through the LM's large tables, which dominated the decoder's time.
  const uint64_t key = lm_key(lm_state, lm_word);
  if (const lm_step* step = lm_cache_.find(key)) {
    bonus += opts_.lexicon_word_bonus + opts_.lexicon_lm_weight * lm_log_prob(*step);
    lm_state = step->next;
    return true;
  }
  lm_queries_.push_back({lm_state, lm_word, {}});
  return false;
}

void lexicon_decoder::score_lm_words() {
  if (pending_lm_.empty()) return;
  // Every extension is made now, so a waiting word end's total is final but for its word bonus
  // and LM term (at most lm_term_bound): one below the floor even with these bounds is pruned
  // whatever the LM says. It is not asked (its total becomes -inf); the others are, together.
  std::size_t asked = 0;
  for (std::size_t i = 0; i < pending_lm_.size(); ++i) {
    hypothesis& e = next_[pending_lm_[i].index];
    const double most = opts_.lexicon_word_bonus + lm_term_bound(lm_, opts_.lexicon_lm_weight, lm_queries_[i].word);
    if (e.total() + most < floor_) {
      e.bonus = neg_inf;
      continue;
    }
    pending_lm_[asked] = pending_lm_[i];
    lm_queries_[asked++] = lm_queries_[i];
  }
  pending_lm_.resize(asked);
  lm_queries_.resize(asked);
  lm_questions_ += static_cast<int64_t>(asked);
  if (asked > 0) lm_->score_all(lm_queries_, lm_scratch_);
  for (std::size_t i = 0; i < pending_lm_.size(); ++i) {
    const arpa_lm::query& q = lm_queries_[i];
    const pending_word& p = pending_lm_[i];
    hypothesis& e = next_[p.index];
    // The same sums, in the same order, as a memo hit in close_word() and end_word().
    e.bonus = (p.bonus + (opts_.lexicon_word_bonus + opts_.lexicon_lm_weight * lm_log_prob(q.answer))) + p.hotword_delta;
    e.lm_state = q.answer.next;
    e.future = future_key(e);
    if (lm_cache_.size() >= max_lm_cache_entries) lm_cache_.clear();
    lm_cache_.try_emplace(lm_key(q.state, q.word), q.answer);
  }
  pending_lm_.clear();
  lm_queries_.clear();
}

double lexicon_decoder::end_bonus(const hypothesis& h) const {
  double bonus = 0;
  int32_t state = h.lm_state;
  // A word in progress, vocabulary or OOV, would have been closed by its last letter's other
  // reading; that reading is the result.
  if (h.where != place::boundary) return neg_inf;
  bonus += hotwords_.finish(h.context);
  if (lm_ && opts_.lm_end_of_sentence) bonus += opts_.lexicon_lm_weight * lm_->end_of_sentence(state);
  return bonus;
}

decode_result lexicon_decoder::result_of(const hypothesis& h, double score, bool timed) const {
  const std::vector<int32_t> labels = trie_.labels(h.node);
  std::vector<int32_t> tokens(labels.size());
  // Not a vector<bool>: make_result reads the flags as a contiguous span.
  const auto ends = std::make_unique<bool[]>(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    tokens[i] = labels[i] % vocab_;
    const auto k = static_cast<kind>(labels[i] / vocab_);
    ends[i] = k == kind::word_end || k == kind::oov_end;
  }
  const std::span<const bool> ends_word(ends.get(), labels.size());
  const frame_timing timing{frame_offset_, opts_.frame_ms};
  if (timed)
    if (auto alignment = aligner_.align(frames_, tokens)) return make_result(*alignment, *tokens_, timing, score, ends_word);
  // Untimed on request; else unreachable: a hypothesis only grows by tokens of the stored
  // frames, so a path exists.
  std::vector<aligned_token> untimed;
  for (int32_t t : tokens) untimed.push_back({t, 0, 0, 0.0f});
  return make_result(untimed, *tokens_, timing, score, ends_word);
}

std::vector<std::pair<std::vector<int32_t>, double>> lexicon_decoder::kept() const {
  std::vector<std::pair<std::vector<int32_t>, double>> out;
  for (const hypothesis& h : beams_) out.emplace_back(trie_.labels(h.node), h.total());
  return out;
}

decode_result lexicon_decoder::partial() const { return result_of(beams_.front(), beams_.front().total()); }

decode_result lexicon_decoder::finalize() {
  // The best hypothesis that can end here; should none (every survivor mid-word), the best one.
  const auto ranked = rank_finals(
      beams_.size(), [&](std::size_t i) { return beams_[i].total() + end_bonus(beams_[i]); }, beams_.front().total());
  decode_result r = result_of(beams_[ranked.front().index], ranked.front().score);
  if (opts_.alternatives > 0)
    r.alternatives = n_best(
        ranked, opts_.alternatives, opts_.alternatives_scale, r, [&](std::size_t i) { return result_of(beams_[i], 0, false).text; },
        [&](std::size_t i, double score) { return result_of(beams_[i], score); });
  frame_offset_ += frames_.size();
  start_utterance();
  return r;
}

std::size_t lexicon_decoder::memory_bytes() const {
  return frames_.memory_bytes() + trie_.memory_bytes() + (beams_.capacity() + next_.capacity()) * sizeof(hypothesis) +
         slot_.memory_bytes() + future_.memory_bytes() + order_.capacity() * sizeof(std::size_t) + ranked_.capacity() * sizeof(ranked_candidates::value_type) + scores_.capacity() * sizeof(double) +
         row_.capacity() * sizeof(float) + candidates_.capacity() * sizeof(token_log_prob) + lm_cache_.memory_bytes() +
         pending_lm_.capacity() * sizeof(pending_word) + lm_queries_.capacity() * sizeof(arpa_lm::query) +
         lm_scratch_.capacity() * sizeof(uint32_t) + is_parent_.memory_bytes() + child_token_.memory_bytes() + counted_.memory_bytes() +
         floor_heap_.capacity() * sizeof(double) + aligner_.memory_bytes();
}

}  // namespace sluice::moe
