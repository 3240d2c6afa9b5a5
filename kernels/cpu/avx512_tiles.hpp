#pragma once
/// The register-tile plan of the AVX-512 matmuls (the f32 one in ops_avx512.cpp, the bf16 one in
/// bf16_gemm.cpp): tile shapes, the table of tile functions and the walk over C. Plain C++ (no
/// target attributes): the tiles themselves are the AVX-512 code, reached through the table.

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

namespace sluice::kernels::cpu::avx512_tiles {

constexpr int lanes = 16;
// Register tiles: `rows_for(v)` rows of A times v vectors of B columns, sized so the
// accumulators plus the B vectors and a broadcast fit the 32 zmm registers, and so that the
// multiply-adds outnumber the loads. Columns go in blocks of 3 vectors (48 wide: divides every
// width of the default model) except 33..64-wide remainders, which take one 4-vector block.
constexpr int max_vecs = 4;
constexpr int max_rows = 12;
constexpr int rows_for(int vecs) { return vecs <= 2 ? 12 : vecs == 3 ? 8 : 6; }
constexpr int64_t block_vecs = 3;
// Rows of A kept hot while every column block of B passes over them (a multiple of every
// tile height).
constexpr int64_t row_block = 120;

/// The lane mask of the first n of 16 lanes (none for n <= 0), as an __mmask16 holds it.
constexpr uint16_t tail_bits(int64_t n) {
  return n <= 0 ? uint16_t{0} : n >= lanes ? uint16_t{0xFFFF} : static_cast<uint16_t>((1u << n) - 1u);
}

/// [ragged][vectors - 1][rows - 1] -> Of<rows, vectors, ragged>::fn, for every tile shape.
template <class Fn>
using table = std::array<std::array<std::array<Fn, max_rows>, max_vecs>, 2>;

template <class Fn, template <int, int, bool> class Of, int V, bool Ragged, int... R>
constexpr std::array<Fn, max_rows> rows_of(std::integer_sequence<int, R...>) {
  std::array<Fn, max_rows> t{};
  ((t[R] = Of<R + 1, V, Ragged>::fn), ...);
  return t;
}

template <class Fn, template <int, int, bool> class Of, bool Ragged>
constexpr std::array<std::array<Fn, max_rows>, max_vecs> vecs_of() {
  return {rows_of<Fn, Of, 1, Ragged>(std::make_integer_sequence<int, rows_for(1)>{}),
          rows_of<Fn, Of, 2, Ragged>(std::make_integer_sequence<int, rows_for(2)>{}),
          rows_of<Fn, Of, 3, Ragged>(std::make_integer_sequence<int, rows_for(3)>{}),
          rows_of<Fn, Of, 4, Ragged>(std::make_integer_sequence<int, rows_for(4)>{})};
}

template <class Fn, template <int, int, bool> class Of>
constexpr table<Fn> make_table() {
  return {vecs_of<Fn, Of, false>(), vecs_of<Fn, Of, true>()};
}

/// Walks C [m, n] in tiles: row blocks of row_block, column blocks as above, tile rows of
/// rows_for(vectors); calls tile(t[ragged][vectors - 1][rows - 1], i0, j0, mask of the last
/// vector's columns) for each.
template <class Fn, class Call>
inline void for_each_tile(const table<Fn>& t, int64_t m, int64_t n, Call&& tile) {
  for (int64_t ib = 0; ib < m; ib += row_block) {
    const int64_t i_end = std::min(m, ib + row_block);
    for (int64_t j0 = 0; j0 < n;) {
      const int64_t cols = n - j0;
      const int64_t vecs = cols > block_vecs * lanes && cols <= max_vecs * lanes
                               ? max_vecs
                               : std::min(block_vecs, (cols + lanes - 1) / lanes);
      const int64_t width = std::min(cols, vecs * lanes);
      const int64_t last_cols = width - (vecs - 1) * lanes;
      const auto& by_vecs = t[last_cols < lanes];
      const int64_t step = rows_for(static_cast<int>(vecs));
      for (int64_t i0 = ib; i0 < i_end; i0 += step) {
        const int64_t rows = std::min(step, i_end - i0);
        tile(by_vecs[vecs - 1][rows - 1], i0, j0, tail_bits(last_cols));
      }
      j0 += width;
    }
  }
}

}  // namespace sluice::kernels::cpu::avx512_tiles
