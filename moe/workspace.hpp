#pragma once
/// Scratch memory of the forward, reused from call to call so that steady-state inference
/// allocates nothing: buffers only ever grow, to the largest call seen, and every growth is
/// counted, so tests (and the engine's metrics) can check that repeated steps of the same
/// shapes stop allocating. One per micro-batch, stream or expert actor; never shared between
/// threads.
///
/// The engine preallocates (the preallocate_* functions, micro_batch::preallocate): each
/// buffer here is sized and written once for the largest step of step_bounds (a stream's keys
/// only as far as a bounded attention window allows; per-stream caches are the streams' own),
/// so neither the heap nor resident memory creeps up under load as larger steps come by.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "moe/attention.hpp"
#include "moe/routing.hpp"

namespace sluice::moe {

/// The largest step a workspace serves without growing: at most `tokens` subsampled frames in
/// all, at most `stream_frames` of them from one stream, cut into at most `blocks` token
/// blocks (shards plus the overflow block).
struct step_bounds {
  int64_t tokens = 0;
  int64_t stream_frames = 0;
  int32_t blocks = 1;
};

struct workspace {
  // frontend convolutions
  std::vector<float> im2col, conv1_out, conv2_out;
  // attention: RoPE factors of the micro-batch's rows, projections, keys, scores
  rope_table rope;
  std::vector<float> qkv, att, keys_t, scores;
  // MoE dense half: shared experts, context mean, selection scratch, the routing decision
  std::vector<float> shared_hidden, context, select_g, select_e;
  routing route;
  // dispatch: pairs ordered by gate weight, per-expert "shard is full" flags
  std::vector<int32_t> pair_rank;
  std::vector<uint8_t> expert_full;
  // expert execution: pairs sorted by expert, gathered rows, hidden activations, outputs
  std::vector<int64_t> expert_offsets, cursor;
  std::vector<int32_t> pair_order;
  std::vector<float> gathered, hidden, expert_out;

  /// Times a buffer grown through scratch() or fit() had to reallocate.
  int64_t growths = 0;

  /// v.data() with room for at least n values (contents unspecified).
  template <class T>
  T* scratch(std::vector<T>& v, std::size_t n) {
    if (v.size() < n) fit(v, n);
    return v.data();
  }

  /// v holds at least n values now, each written once: its pages are resident from here on,
  /// so later growth within them touches no new memory. For preallocation.
  template <class T>
  void commit(std::vector<T>& v, std::size_t n) {
    if (v.size() < n) fit(v, n);
  }

  /// v resized to exactly n values (the first min(old size, n) kept).
  template <class T>
  void fit(std::vector<T>& v, std::size_t n) {
    if (v.capacity() < n) ++growths;
    v.resize(n);
  }
};

}  // namespace sluice::moe
