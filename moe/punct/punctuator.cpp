#include "moe/punct/punctuator.hpp"

#include <algorithm>
#include <cctype>

#include "kernels/cpu/simd.hpp"

namespace sluice::moe::punct {
namespace {

// Token ids fixed by the recipe (tools/train/punct_model.py).
constexpr int unk_id = 0;
constexpr int bos_id = 1;
constexpr int eos_id = 2;
// Output columns.
constexpr std::size_t cap_col = 0;
constexpr std::size_t first_mark_col = 1;
constexpr char marks[] = {0, '.', ',', '?'};
constexpr std::size_t n_marks = sizeof marks;

bool is_pronoun_i(const std::string& w) {
  if (w.empty() || (w[0] != 'i' && w[0] != 'I')) return false;
  return w.size() == 1 || (w.size() > 2 && w[1] == '\'');
}

}  // namespace

punctuator::punctuator(punct_weights weights)
    : w_(std::move(weights)), ops_(&kernels::cpu::cpu_ops_for(kernels::cpu::best_simd_level())) {
  const std::size_t k = w_.kernel;
  for (const conv_layer& c : w_.layers) {
    std::vector<float> t(k * w_.hidden * c.in);
    for (std::size_t o = 0; o < w_.hidden; ++o)
      for (std::size_t i = 0; i < c.in; ++i)
        for (std::size_t j = 0; j < k; ++j) t[(j * c.in + i) * w_.hidden + o] = c.weight[(o * c.in + i) * k + j];
    taps_.push_back(std::move(t));
  }
  for (std::size_t id = 0; id < w_.vocab.size(); ++id) index_.emplace(w_.vocab[id], static_cast<int>(id));
}

result<punctuator> punctuator::load(const std::string& dir) {
  auto w = load_punct(dir);
  if (!w) return tl::unexpected(w.error());
  return punctuator(std::move(*w));
}

punctuator punctuator::from_weights(punct_weights weights) { return punctuator(std::move(weights)); }

int punctuator::token_id(const std::string& word) const {
  std::string lower = word;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  auto it = index_.find(lower);
  // The special tokens are not words: a word spelled "<s>" is unknown, not a sequence start.
  if (it == index_.end() || it->second <= eos_id) return unk_id;
  return it->second;
}

std::vector<word_logits> punctuator::logits(const std::vector<std::string>& words) const {
  if (words.empty()) return {};
  // The sequence the model saw in training: <s> words </s>, activations time-major [t][channel].
  const std::size_t n = words.size() + 2;
  std::vector<float> h(n * w_.embed);
  for (std::size_t t = 0; t < n; ++t) {
    const int id = t == 0 ? bos_id : t + 1 == n ? eos_id : token_id(words[t - 1]);
    std::copy_n(w_.embedding.begin() + static_cast<std::ptrdiff_t>(id) * w_.embed, w_.embed,
                h.begin() + static_cast<std::ptrdiff_t>(t * w_.embed));
  }
  const std::size_t hidden = w_.hidden;
  const auto half = static_cast<std::ptrdiff_t>(w_.kernel / 2);
  const auto len = static_cast<std::ptrdiff_t>(n);
  std::vector<float> y(n * hidden);
  for (std::size_t l = 0; l < w_.layers.size(); ++l) {
    const conv_layer& c = w_.layers[l];
    const std::vector<float>& taps = taps_[l];
    for (std::size_t t = 0; t < n; ++t) std::copy(c.bias.begin(), c.bias.end(), y.begin() + static_cast<std::ptrdiff_t>(t * hidden));
    // One product per tap: y[t] += h[t + (j - half) * dilation] . W_j for every t whose source
    // lies inside the sequence (zero padding: the others get nothing from this tap).
    for (std::size_t j = 0; j < w_.kernel; ++j) {
      const std::ptrdiff_t shift = (static_cast<std::ptrdiff_t>(j) - half) * static_cast<std::ptrdiff_t>(c.dilation);
      const std::ptrdiff_t first = std::max<std::ptrdiff_t>(0, -shift);
      const std::ptrdiff_t last = std::min(len, len - shift);  // exclusive
      if (last <= first) continue;
      kernels::cpu::matmul_args g;
      g.m = last - first;
      g.n = static_cast<int64_t>(hidden);
      g.k = static_cast<int64_t>(c.in);
      g.a = &h[static_cast<std::size_t>(first + shift) * c.in];
      g.lda = static_cast<int64_t>(c.in);
      g.b = &taps[j * c.in * hidden];
      g.ldb = static_cast<int64_t>(hidden);
      g.c = &y[static_cast<std::size_t>(first) * hidden];
      g.ldc = static_cast<int64_t>(hidden);
      g.accumulate = true;
      ops_->matmul(g);
    }
    // ReLU; from the second layer on the block is residual (h + relu(conv h)).
    if (l == 0) {
      for (float& v : y) v = std::max(v, 0.0f);
      h = y;
    } else {
      for (std::size_t i = 0; i < h.size(); ++i) h[i] += std::max(y[i], 0.0f);
    }
  }
  std::vector<word_logits> out(words.size());
  for (std::size_t t = 1; t + 1 < n; ++t) {
    const float* in = &h[t * hidden];
    for (std::size_t k = 0; k < n_outputs; ++k) {
      const float* row = &w_.head_weight[k * hidden];
      float acc = w_.head_bias[k];
      for (std::size_t i = 0; i < hidden; ++i) acc += row[i] * in[i];
      out[t - 1][k] = acc;
    }
  }
  return out;
}

std::vector<word_mark> punctuator::run(const std::vector<std::string>& words) const {
  const std::vector<word_logits> z = logits(words);
  std::vector<word_mark> out(z.size());
  bool sentence_start = true;
  for (std::size_t t = 0; t < z.size(); ++t) {
    std::size_t best = 0;
    for (std::size_t m = 1; m < n_marks; ++m)
      if (z[t][first_mark_col + m] > z[t][first_mark_col + best]) best = m;
    out[t].mark = marks[best];
    out[t].capitalize = z[t][cap_col] > 0.0f || sentence_start || is_pronoun_i(words[t]);
    sentence_start = out[t].mark == '.' || out[t].mark == '?';
  }
  return out;
}

}  // namespace sluice::moe::punct
