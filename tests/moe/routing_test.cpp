// The pieces of the MoE forward that golden parity only covers indirectly: top-k order and
// ties, the counting sort of (token, expert) pairs, the causal context mean.
#include <doctest/doctest.h>

#include <limits>
#include <vector>

#include "moe/moe_layer.hpp"
#include "moe/routed_experts.hpp"
#include "moe/routing.hpp"
#include "moe/workspace.hpp"

using namespace sluice::moe;

TEST_SUITE("model") {
  TEST_CASE("top_k_indices: largest first, lower index first among equal scores") {
    const float s[] = {0.1f, 0.9f, 0.5f, 0.9f, -1.0f, 0.7f};
    int32_t out[3];
    top_k_indices(s, 6, 3, out);
    CHECK(out[0] == 1);
    CHECK(out[1] == 3);
    CHECK(out[2] == 5);
    const float inf = -std::numeric_limits<float>::infinity();
    const float masked[] = {inf, 0.2f, inf, 0.3f};
    int32_t two[2];
    top_k_indices(masked, 4, 2, two);
    CHECK(two[0] == 3);
    CHECK(two[1] == 1);
  }

  TEST_CASE("sort_pairs_by_expert: counting sort, pairs in order within each expert") {
    // Three tokens' top-2 choices, pair p = token * 2 + rank.
    const std::vector<int32_t> experts = {2, 0, 0, 3, 2, 1};
    workspace ws;
    sort_pairs_by_expert(experts.data(), 6, 4, ws);
    CHECK(ws.expert_offsets == std::vector<int64_t>{0, 2, 3, 5, 6});
    CHECK(ws.pair_order == std::vector<int32_t>{1, 2, 5, 0, 4, 3});
  }

  TEST_CASE("causal_context: mean of the last ctx_frames rows, the same in one call or many") {
    const int64_t d = 2, n = 6;
    std::vector<float> y;
    for (int64_t t = 0; t < n; ++t) y.insert(y.end(), {float(t), float(10 * t)});
    context_cache whole;
    std::vector<float> at_once(n * d);
    causal_context(y.data(), n, d, 3, whole, at_once.data());
    CHECK(at_once[0] == 0.0f);                  // frame 0: itself
    CHECK(at_once[2] == doctest::Approx(0.5));  // frames 0, 1
    CHECK(at_once[10] == doctest::Approx(4.0)); // frames 3, 4, 5
    CHECK(at_once[11] == doctest::Approx(40.0));
    context_cache pieces;
    std::vector<float> piecewise(n * d);
    for (int64_t t = 0; t < n; ++t) causal_context(y.data() + t * d, 1, d, 3, pieces, piecewise.data() + t * d);
    CHECK(piecewise == at_once);
    CHECK(pieces.n == 2);
  }
}
