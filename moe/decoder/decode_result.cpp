#include "moe/decoder/decode_result.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sluice::moe {

namespace {

int64_t to_ms(int64_t frame, double frame_ms) {
  return static_cast<int64_t>(std::llround(static_cast<double>(frame) * frame_ms));
}

}  // namespace

decode_result make_result(std::span<const aligned_token> alignment, const token_table& tokens,
                          const frame_timing& timing, double score) {
  return make_result(alignment, tokens, timing, score, {});
}

decode_result make_result(std::span<const aligned_token> alignment, const token_table& tokens,
                          const frame_timing& timing, double score, std::span<const bool> ends_word) {
  decode_result out;
  out.score = score;
  out.tokens.reserve(alignment.size());

  word_info current;
  bool open = false;
  auto close_word = [&] {
    if (!open) return;
    open = false;
    if (current.word.empty()) {  // a lone word-start piece "▁" spells nothing
      current = word_info{};
      return;
    }
    if (!out.text.empty()) out.text += ' ';
    out.text += current.word;
    out.words.push_back(std::move(current));
    current = word_info{};
  };

  for (std::size_t i = 0; i < alignment.size(); ++i) {
    const aligned_token& a = alignment[i];
    out.tokens.push_back(a.token);
    if (a.token == tokens.space_id()) {
      close_word();
      continue;
    }
    // A word-start piece begins a new word (a piece vocabulary has no <space>).
    if (tokens.starts_word(a.token)) close_word();
    const int64_t first = timing.frame_offset + a.first_frame;
    const int64_t end = timing.frame_offset + a.last_frame + 1;
    if (!open) {
      current.start_ms = to_ms(first, timing.frame_ms);
      current.confidence = a.posterior;
      open = true;
    }
    current.word += tokens.text(a.token);
    current.end_ms = to_ms(end, timing.frame_ms);
    current.confidence = std::min(current.confidence, a.posterior);
    if (i < ends_word.size() && ends_word[i]) close_word();
  }
  close_word();
  return out;
}

std::vector<final_candidate> rank_finals(std::size_t n, const std::function<double(std::size_t)>& score,
                                         double fallback) {
  std::vector<final_candidate> ranked;
  for (std::size_t i = 0; i < n; ++i) {
    const double s = score(i);
    if (s > -std::numeric_limits<double>::infinity()) ranked.push_back({i, s});  // the sort needs an order
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const final_candidate& a, const final_candidate& b) { return a.score > b.score; });
  if (ranked.empty()) ranked.push_back({0, fallback});
  return ranked;
}

std::vector<decode_alternative> n_best(std::span<const final_candidate> ranked, int n, double scale,
                                       const decode_result& best,
                                       const std::function<std::string(std::size_t)>& text_of,
                                       const std::function<decode_result(std::size_t, double)>& result_of) {
  std::vector<decode_alternative> out;
  if (n <= 0 || ranked.empty()) return out;
  // Probabilities relative to the best reading's (no overflow; the best is 1).
  const double top = ranked.front().score;
  if (!std::isfinite(top)) return {{best.text, best.words, best.score, 1.0f}};  // nothing to weigh
  double mass = 0;
  std::vector<double> share;  // per listed text: its summed exp(score - top)
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    if (!(ranked[i].score > -std::numeric_limits<double>::infinity())) continue;  // cannot end here
    const double p = std::exp(scale * (ranked[i].score - top));
    mass += p;
    std::string text = i == 0 ? best.text : text_of(ranked[i].index);
    const auto same = std::find_if(out.begin(), out.end(), [&](const decode_alternative& a) { return a.text == text; });
    if (same != out.end()) {
      share[static_cast<std::size_t>(same - out.begin())] += p;
      continue;
    }
    if (static_cast<int>(out.size()) == n) continue;  // only readings of listed texts still count
    decode_result r = i == 0 ? best : result_of(ranked[i].index, ranked[i].score);
    out.push_back({std::move(text), std::move(r.words), r.score, 0.0f});
    share.push_back(p);
  }
  for (std::size_t k = 0; k < out.size(); ++k)
    out[k].confidence = static_cast<float>(std::clamp(share[k] / mass, 0.0, 1.0));
  return out;
}

}  // namespace sluice::moe
