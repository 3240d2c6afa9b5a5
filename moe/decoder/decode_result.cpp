#include "moe/decoder/decode_result.hpp"

#include <algorithm>
#include <cmath>

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

}  // namespace sluice::moe
