// The pieces of the MoE forward that golden parity only covers indirectly: top-k order and
// ties, the counting sort of (token, expert) pairs, the causal context mean.
#include <doctest/doctest.h>

#include <limits>
#include <vector>

#include "moe/moe_layer.hpp"
#include "moe/routed_experts.hpp"
#include "moe/routing.hpp"

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

  TEST_CASE("group_by_expert: counting sort, tokens in order within each expert") {
    routing r;
    r.n = 3;
    r.top_k = 2;
    r.experts = {2, 0, 0, 3, 2, 1};
    r.weights = {0.6f, 0.4f, 0.5f, 0.5f, 0.9f, 0.1f};
    expert_groups g;
    std::vector<int64_t> cursor;
    group_by_expert(r, 4, g, cursor);
    CHECK(g.offsets == std::vector<int64_t>{0, 2, 3, 5, 6});
    CHECK(g.token == std::vector<int32_t>{0, 1, 2, 0, 2, 1});
    CHECK(g.weight == std::vector<float>{0.4f, 0.5f, 0.1f, 0.6f, 0.9f, 0.5f});
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
