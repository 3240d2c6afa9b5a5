#include "actors/punct_hook.hpp"

namespace sluice::actors {

namespace {

moe::postproc::trailing_mark to_mark(char c) {
  switch (c) {
    case '.': return moe::postproc::trailing_mark::period;
    case ',': return moe::postproc::trailing_mark::comma;
    case '?': return moe::postproc::trailing_mark::question;
    default: return moe::postproc::trailing_mark::none;
  }
}

}  // namespace

std::vector<moe::postproc::punct_decision> model_punctuation::punctuate(const std::vector<std::string>& words,
                                                                        bool is_final) const {
  const auto marks = model_->run(words);
  std::vector<moe::postproc::punct_decision> out(marks.size());
  for (std::size_t i = 0; i < marks.size(); ++i) out[i] = {marks[i].capitalize, to_mark(marks[i].mark)};
  if (!out.empty()) {
    auto& last = out.back().mark;
    if (!is_final) last = moe::postproc::trailing_mark::none;
    else if (last != moe::postproc::trailing_mark::question) last = moe::postproc::trailing_mark::period;
  }
  return out;
}

}  // namespace sluice::actors
