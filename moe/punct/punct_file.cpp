#include "moe/punct/punct_file.hpp"

#include <cmath>
#include <cstring>

#include "config/mapped_file.hpp"

namespace sluice::moe::punct {
namespace {

constexpr std::string_view magic = "SLPUNCT1";
constexpr std::size_t n_specials = 3;
constexpr std::string_view specials[n_specials] = {"<unk>", "<s>", "</s>"};
// Bounds far above any model the recipe makes; they only keep a corrupt header from asking for
// gigabytes before the size check against the file catches it.
constexpr uint32_t max_vocab = 1u << 20;
constexpr uint32_t max_dim = 4096;
constexpr uint32_t max_kernel = 63;
constexpr uint32_t max_layers = 64;
constexpr uint32_t max_dilation = 1024;

// A cursor over the binary that fails once instead of at every read.
class reader {
 public:
  explicit reader(std::string_view data) : data_(data) {}

  bool u32(uint32_t& v) {
    if (data_.size() - pos_ < sizeof v) return false;
    // The format is little-endian, as is every machine sluice builds for.
    std::memcpy(&v, data_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return true;
  }

  bool floats(std::vector<float>& out, std::size_t n) {
    if ((data_.size() - pos_) / sizeof(float) < n) return false;
    out.resize(n);
    std::memcpy(out.data(), data_.data() + pos_, n * sizeof(float));
    pos_ += n * sizeof(float);
    return true;
  }

  std::size_t left() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

bool all_finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

result<config::mapped_file> read_file(const std::string& path) {
  // Mapped: a character-by-character stream read was 13% of a start's instructions.
  auto f = config::mapped_file::open(path);
  if (!f) return fail(errc::io, "punct: " + f.error().message);
  return f;
}

result<std::vector<std::string>> parse_vocab(std::string_view text, uint32_t expected,
                                             const std::string& source) {
  std::vector<std::string> vocab;
  vocab.reserve(expected);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    vocab.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (vocab.size() != expected)
    return fail(errc::corrupt, source + ": vocab.txt has " + std::to_string(vocab.size()) +
                                   " tokens, punct.bin says " + std::to_string(expected));
  for (std::size_t i = 0; i < n_specials; ++i)
    if (vocab[i] != specials[i])
      return fail(errc::corrupt, source + ": vocab.txt line " + std::to_string(i + 1) +
                                     " must be " + std::string(specials[i]));
  return vocab;
}

}  // namespace

result<punct_weights> parse_punct(std::string_view bin, std::string_view vocab_text,
                                  const std::string& source) {
  if (bin.size() < magic.size()) return fail(errc::truncated, source + ": punct.bin shorter than its magic");
  if (bin.substr(0, magic.size()) != magic)
    return fail(errc::corrupt, source + ": punct.bin does not start with SLPUNCT1");
  reader r(bin.substr(magic.size()));
  punct_weights w;
  uint32_t vocab = 0, n_layers = 0;
  if (!r.u32(vocab) || !r.u32(w.embed) || !r.u32(w.hidden) || !r.u32(w.kernel) || !r.u32(n_layers))
    return fail(errc::truncated, source + ": punct.bin header cut short");
  if (vocab <= n_specials || vocab > max_vocab || w.embed == 0 || w.embed > max_dim ||
      w.hidden == 0 || w.hidden > max_dim || w.kernel == 0 || w.kernel > max_kernel ||
      w.kernel % 2 == 0 || n_layers == 0 || n_layers > max_layers)
    return fail(errc::corrupt, source + ": punct.bin header has impossible sizes (vocab " +
                                   std::to_string(vocab) + ", embed " + std::to_string(w.embed) +
                                   ", hidden " + std::to_string(w.hidden) + ", kernel " +
                                   std::to_string(w.kernel) + ", layers " + std::to_string(n_layers) + ")");
  w.layers.resize(n_layers);
  for (uint32_t l = 0; l < n_layers; ++l) {
    if (!r.u32(w.layers[l].dilation)) return fail(errc::truncated, source + ": punct.bin dilations cut short");
    if (w.layers[l].dilation == 0 || w.layers[l].dilation > max_dilation)
      return fail(errc::corrupt, source + ": punct.bin layer " + std::to_string(l) + " has dilation " +
                                     std::to_string(w.layers[l].dilation));
  }
  bool ok = r.floats(w.embedding, std::size_t{vocab} * w.embed);
  for (uint32_t l = 0; ok && l < n_layers; ++l) {
    conv_layer& c = w.layers[l];
    c.in = l == 0 ? w.embed : w.hidden;
    ok = r.floats(c.weight, std::size_t{w.hidden} * c.in * w.kernel) && r.floats(c.bias, w.hidden);
  }
  ok = ok && r.floats(w.head_weight, n_outputs * w.hidden) && r.floats(w.head_bias, n_outputs);
  if (!ok) return fail(errc::truncated, source + ": punct.bin ends inside its weights");
  if (r.left() != 0)
    return fail(errc::corrupt, source + ": punct.bin has " + std::to_string(r.left()) +
                                   " bytes after the last weight");
  bool finite = all_finite(w.embedding) && all_finite(w.head_weight) && all_finite(w.head_bias);
  for (const conv_layer& c : w.layers) finite = finite && all_finite(c.weight) && all_finite(c.bias);
  if (!finite) return fail(errc::corrupt, source + ": punct.bin holds a NaN or infinite weight");
  auto v = parse_vocab(vocab_text, vocab, source);
  if (!v) return tl::unexpected(v.error());
  w.vocab = std::move(*v);
  return w;
}

result<punct_weights> load_punct(const std::string& dir) {
  auto bin = read_file(dir + "/punct.bin");
  if (!bin) return tl::unexpected(bin.error());
  auto vocab = read_file(dir + "/vocab.txt");
  if (!vocab) return tl::unexpected(vocab.error());
  return parse_punct(bin->text(), vocab->text(), dir);
}

}  // namespace sluice::moe::punct
