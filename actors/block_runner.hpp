#pragma once
/// What expert and spillway actors do with a block_msg: FP8 rows are dequantized on arrival
/// (into the block's own row buffer, which the receiver owns until it replies), the shard's
/// experts run on the rows with the grouped GEMM, and the output goes into the message's reply
/// buffer. Counts pairs per (layer, expert) and the bytes that came in and went out.

#include <cstdint>
#include <vector>

#include "actors/messages.hpp"
#include "config/error.hpp"
#include "moe/expert_shard.hpp"
#include "moe/workspace.hpp"

namespace sluice::actors {

class block_runner {
 public:
  block_runner(moe::expert_shard shard, int n_layers, int64_t n_experts)
      : shard_(std::move(shard)), n_experts_(n_experts), pairs_(static_cast<std::size_t>(n_layers * n_experts), 0) {}

  /// Serves `shard` from now on (a spillway's replica set changed); the workspace and the
  /// counters stay.
  void reshard(moe::expert_shard shard) { shard_ = std::move(shard); }
  const moe::expert_shard& shard() const { return shard_; }

  /// Commits the workspace for blocks of up to `pairs` pairs of `arch`'s experts
  /// (preallocation: such blocks then neither allocate nor touch new memory).
  void preallocate(const moe::architecture& arch, int64_t pairs);

  /// errc::invalid_argument (reply untouched) for a malformed block or FP8 payload, or one
  /// naming an expert the shard does not hold.
  result<void> run(block_msg& m);

  /// Pairs run per expert since the last take: i64 [n_layers, n_experts], then zeroed.
  std::vector<int64_t> take_pairs();
  int64_t bytes_in() const { return bytes_in_; }
  int64_t bytes_out() const { return bytes_out_; }
  int64_t blocks() const { return blocks_; }
  int64_t rows() const { return rows_; }
  /// Buffer growths of this runner's workspace (steady state: flat).
  int64_t growths() const { return ws_.growths; }

 private:
  moe::expert_shard shard_;
  moe::workspace ws_;
  int64_t n_experts_;
  std::vector<int64_t> pairs_;
  int64_t bytes_in_ = 0, bytes_out_ = 0, blocks_ = 0, rows_ = 0;
};

}  // namespace sluice::actors
