#include "actors/block_runner.hpp"

#include "moe/block_codec.hpp"
#include "moe/routed_experts.hpp"

namespace sluice::actors {

int64_t block_msg::wire_bytes() const {
  if (!block) return 0;
  const int64_t pairs = block->n_pairs() * static_cast<int64_t>(sizeof(int32_t) * 2 + sizeof(float));
  if (encoding == block_encoding::fp8_e4m3 && fp8)
    return static_cast<int64_t>(fp8->q.size() + fp8->scales.size() * sizeof(float)) + pairs;
  return static_cast<int64_t>(block->rows.size() * sizeof(float)) + pairs;
}

result<void> block_runner::run(block_msg& m) {
  if (!m.block || !m.reply) return fail(errc::invalid_argument, "token block without its buffers");
  auto& b = *m.block;
  const int64_t in_bytes = m.wire_bytes();
  if (m.encoding == block_encoding::fp8_e4m3) {
    if (!m.fp8) return fail(errc::invalid_argument, "FP8 token block without its rows");
    const auto cap = b.rows.capacity();
    if (auto ok = moe::decode_fp8(m.fp8->q, m.fp8->scales, b.d, b.rows); !ok) return ok;
    if (b.rows.capacity() > cap) ++ws_.growths;
  }
  if (auto ok = shard_.run(b, *m.reply, ws_); !ok) return ok;
  for (int64_t p = 0; p < b.n_pairs(); ++p) ++pairs_[static_cast<std::size_t>(b.layer * n_experts_ + b.pair_expert[p])];
  bytes_in_ += in_bytes;
  bytes_out_ += static_cast<int64_t>(m.reply->out.size() * sizeof(float));
  ++blocks_;
  rows_ += b.n_rows();
  return {};
}

void block_runner::preallocate(const moe::architecture& arch, int64_t pairs) {
  moe::preallocate_experts(arch, pairs, ws_);
}

std::vector<int64_t> block_runner::take_pairs() {
  auto out = pairs_;
  std::fill(pairs_.begin(), pairs_.end(), 0);
  return out;
}

}  // namespace sluice::actors
