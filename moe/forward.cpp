#include "moe/forward.hpp"

#include <algorithm>
#include <cmath>

#include "moe/local_experts.hpp"
#include "moe/micro_batch.hpp"
#include "moe/stream_state.hpp"

namespace sluice::moe {
namespace {

// Input frames per frontend call: bounds its scratch memory on long utterances.
constexpr int64_t offline_piece_frames = 256;

void append_sorted(const std::vector<int32_t>& rows, int64_t n, int width, std::vector<int32_t>& dst) {
  const auto at = dst.size();
  dst.insert(dst.end(), rows.begin(), rows.begin() + n * width);
  for (int64_t t = 0; t < n; ++t) std::sort(dst.begin() + at + t * width, dst.begin() + at + (t + 1) * width);
}

}  // namespace

result<void> check_window(attention_window w) {
  if (w.chunk_frames < 0)
    return fail(errc::invalid_argument, "attention window: chunk_frames " + std::to_string(w.chunk_frames) +
                                            " must be >= 0 (0: full attention)");
  if (w.left_chunks < -1)
    return fail(errc::invalid_argument, "attention window: left_chunks " + std::to_string(w.left_chunks) +
                                            " must be >= -1 (-1: unbounded)");
  return {};
}

result<forward_result> forward_offline(const acoustic_model& model, const float* fbank, int64_t n_frames,
                                       const forward_options& options, workspace* ws) {
  const auto& arch = model.arch();
  const attention_window window = options.window.value_or(attention_window{arch.chunk_frames, arch.left_chunks});
  if (auto ok = check_window(window); !ok) return tl::unexpected(ok.error());
  if (n_frames < 0) return fail(errc::invalid_argument, "forward: negative frame count " + std::to_string(n_frames));
  if (n_frames > 0 && !fbank) return fail(errc::invalid_argument, "forward: null fbank with frames");
  for (int64_t i = 0; i < n_frames * arch.n_mels; ++i)
    if (!std::isfinite(fbank[i]))
      return fail(errc::invalid_argument, "forward: fbank frame " + std::to_string(i / arch.n_mels) + " bin " +
                                              std::to_string(i % arch.n_mels) + " is not finite");

  // The utterance is one stream that has finished: one step takes all of it.
  auto stream = stream_state::create(model, window, options.compute);
  if (!stream) return tl::unexpected(stream.error());
  for (int64_t at = 0; at < n_frames; at += offline_piece_frames)
    if (auto ok = stream->accept_fbank(fbank + at * arch.n_mels, std::min(offline_piece_frames, n_frames - at)); !ok)
      return tl::unexpected(ok.error());
  if (auto ok = stream->finish(); !ok) return tl::unexpected(ok.error());
  micro_batch batch(model, 0, options.compute, ws);
  stream_state* one[] = {&*stream};
  if (auto ok = batch.begin(one, all_chunks); !ok) return tl::unexpected(ok.error());

  forward_result out;
  out.vocab = arch.vocab_size;
  out.n_frames = batch.n_tokens();
  if (options.trace) out.layers.resize(arch.n_layers);
  auto trace = [&](int layer) {
    auto& t = out.layers[layer];
    t.out.assign(batch.hidden().begin(), batch.hidden().end());
    append_sorted(batch.route().experts, batch.n_tokens(), batch.route().top_k, t.experts);
    append_sorted(batch.route().groups, batch.n_tokens(), batch.route().top_groups, t.groups);
  };
  local_experts experts(model, options.compute);
  if (auto ok = experts.run(batch, options.trace ? std::function<void(int)>(trace) : nullptr, options.reroute); !ok)
    return tl::unexpected(ok.error());
  const auto logits = batch.logits(0).logits;
  out.logits.assign(logits.begin(), logits.end());
  return out;
}

}  // namespace sluice::moe
