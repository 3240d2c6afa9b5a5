// Widening F16 and BF16 weights to f32: values worked out by hand, every one of the 65,536 bit
// patterns against the format's defining formula, and tensor views of each dtype.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "moe/half_float.hpp"

using namespace sluice;
using namespace sluice::moe;

namespace {

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }

// The value a finite 16-bit float denotes, from its fields, in double (exact for both formats):
// normal (2^mant_bits + mant) * 2^(exp - bias - mant_bits), subnormal mant * 2^(1 - bias - mant_bits).
double finite_value(uint16_t h, int exp_bits, int mant_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int exp = (h >> mant_bits) & ((1 << exp_bits) - 1);
  const int mant = h & ((1 << mant_bits) - 1);
  const double v = exp == 0 ? std::ldexp(double(mant), 1 - bias - mant_bits)
                            : std::ldexp(double((1 << mant_bits) + mant), exp - bias - mant_bits);
  return (h & 0x8000) ? -v : v;
}

// Checks every bit pattern of a format with `exp_bits` exponent bits against finite_value, and
// the infinities and NaNs (payload kept in the top of f32's mantissa).
template <float (*widen)(uint16_t)>
int count_wrong(int exp_bits, int mant_bits) {
  int wrong = 0;
  const int exp_max = (1 << exp_bits) - 1;
  for (uint32_t i = 0; i <= 0xffff; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float got = widen(h);
    const int exp = (h >> mant_bits) & exp_max;
    const uint32_t mant = h & ((1u << mant_bits) - 1);
    bool ok;
    if (exp == exp_max) {
      const uint32_t want = (uint32_t(h >> 15) << 31) | 0x7f800000u | (mant << (23 - mant_bits));
      ok = bits_of(got) == want && (mant == 0 ? std::isinf(got) : std::isnan(got));
    } else {
      const double want = finite_value(h, exp_bits, mant_bits);
      ok = double(got) == want && std::signbit(got) == bool(h & 0x8000);
    }
    wrong += !ok;
  }
  return wrong;
}

std::vector<std::byte> halves(std::initializer_list<uint16_t> v, std::size_t lead = 0) {
  std::vector<std::byte> out(lead + v.size() * 2);
  std::memcpy(out.data() + lead, v.begin(), v.size() * 2);
  return out;
}

tensor_view view_of(st_dtype dtype, int64_t n, const std::byte* data, std::size_t nbytes) {
  tensor_view t;
  t.name = "blocks.0.ln1.weight";
  t.dtype = dtype;
  t.shape = {n};
  t.data = data;
  t.nbytes = nbytes;
  return t;
}

}  // namespace

TEST_SUITE("half_float") {
  TEST_CASE("f16 to f32: values worked out by hand") {
    CHECK(f16_to_f32(0x3c00) == 1.0f);
    CHECK(f16_to_f32(0xc000) == -2.0f);
    CHECK(f16_to_f32(0x7bff) == 65504.0f);                 // largest finite: 2^15 * (2 - 2^-10)
    CHECK(f16_to_f32(0x0400) == std::ldexp(1.0f, -14));    // smallest normal
    CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));    // smallest subnormal
    CHECK(f16_to_f32(0x8001) == -std::ldexp(1.0f, -24));
    CHECK(f16_to_f32(0x03ff) == std::ldexp(1023.0f, -24)); // largest subnormal
    CHECK(f16_to_f32(0x0200) == std::ldexp(1.0f, -15));    // a subnormal with its leading one at bit 9
    CHECK(f16_to_f32(0x3555) == 0.333251953125f);          // 1365 / 4096: f16's nearest to 1/3
    CHECK(bits_of(f16_to_f32(0x0000)) == 0x00000000u);
    CHECK(bits_of(f16_to_f32(0x8000)) == 0x80000000u);     // -0 keeps its sign
    CHECK(f16_to_f32(0x7c00) == INFINITY);
    CHECK(f16_to_f32(0xfc00) == -INFINITY);
    CHECK(bits_of(f16_to_f32(0x7e00)) == 0x7fc00000u);     // the quiet NaN
    CHECK(bits_of(f16_to_f32(0x7c01)) == 0x7f802000u);     // a signalling NaN keeps its payload
    CHECK(bits_of(f16_to_f32(0xffff)) == 0xffffe000u);
  }

  TEST_CASE("bf16 to f32: values worked out by hand") {
    CHECK(bf16_to_f32(0x3f80) == 1.0f);
    CHECK(bf16_to_f32(0xc000) == -2.0f);
    CHECK(bf16_to_f32(0x4780) == 65536.0f);
    CHECK(bf16_to_f32(0x3eab) == 0.333984375f);  // 1.3359375 * 2^-2: bf16's nearest to 1/3
    CHECK(bits_of(bf16_to_f32(0x7f7f)) == 0x7f7f0000u);  // largest finite, 2^127 * (2 - 2^-7)
    CHECK(bf16_to_f32(0x7f7f) == std::ldexp(255.0f, 120));
    CHECK(bf16_to_f32(0x0080) == std::ldexp(1.0f, -126));  // smallest normal
    CHECK(bf16_to_f32(0x0001) == std::ldexp(1.0f, -133));  // smallest subnormal
    CHECK(bits_of(bf16_to_f32(0x8000)) == 0x80000000u);
    CHECK(bf16_to_f32(0x7f80) == INFINITY);
    CHECK(bf16_to_f32(0xff80) == -INFINITY);
    CHECK(bits_of(bf16_to_f32(0x7fc0)) == 0x7fc00000u);
    CHECK(bits_of(bf16_to_f32(0x7f81)) == 0x7f810000u);
  }

  TEST_CASE("every f16 and bf16 bit pattern widens to the value its fields define") {
    CHECK(count_wrong<f16_to_f32>(5, 10) == 0);
    CHECK(count_wrong<bf16_to_f32>(8, 7) == 0);
  }

  TEST_CASE("widen_to_f32 reads F32, F16 and BF16 views, unaligned") {
    const auto f16 = halves({0x3c00, 0xc000, 0x0001, 0x7c00}, 1);
    auto a = widen_to_f32(view_of(st_dtype::f16, 4, f16.data() + 1, 8), "w.safetensors");
    REQUIRE_MESSAGE(a.has_value(), a.error().message);
    CHECK(*a == std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24), INFINITY});

    const auto bf16 = halves({0x3f80, 0xc000, 0x3eab}, 1);
    auto b = widen_to_f32(view_of(st_dtype::bf16, 3, bf16.data() + 1, 6), "w.safetensors");
    REQUIRE_MESSAGE(b.has_value(), b.error().message);
    CHECK(*b == std::vector<float>{1.0f, -2.0f, 0.333984375f});

    const float f32[2] = {0.5f, -3.25f};
    std::vector<std::byte> raw(1 + sizeof f32);
    std::memcpy(raw.data() + 1, f32, sizeof f32);
    auto c = widen_to_f32(view_of(st_dtype::f32, 2, raw.data() + 1, 8), "w.safetensors");
    REQUIRE_MESSAGE(c.has_value(), c.error().message);
    CHECK(*c == std::vector<float>{0.5f, -3.25f});

    auto empty = widen_to_f32(view_of(st_dtype::f16, 0, nullptr, 0), "w.safetensors");
    REQUIRE(empty.has_value());
    CHECK(empty->empty());
  }

  TEST_CASE("widen_to_f32 refuses other dtypes and byte lengths that do not fit the shape") {
    const std::vector<std::byte> bytes(64);
    for (auto dtype : {st_dtype::i8, st_dtype::f64, st_dtype::i32, st_dtype::u16, st_dtype::f8_e4m3}) {
      CAPTURE(to_string(dtype));
      auto r = widen_to_f32(view_of(dtype, 4, bytes.data(), 4 * dtype_size(dtype)), "w.safetensors");
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().code == errc::unsupported);
      CHECK(r.error().message == std::string("w.safetensors: tensor 'blocks.0.ln1.weight' is ") + to_string(dtype) +
                                     "; the engine reads F32, F16 or BF16 weights");
    }
    // 4 F16 values are 8 bytes: 16 (their F32 size) and 6 are both refused.
    for (std::size_t nbytes : {16u, 6u}) {
      CAPTURE(nbytes);
      auto r = widen_to_f32(view_of(st_dtype::f16, 4, bytes.data(), nbytes), "w.safetensors");
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error().code == errc::corrupt);
      CHECK(r.error().message == "w.safetensors: tensor 'blocks.0.ln1.weight': shape [4] F16 needs 8 bytes, the view "
                                 "holds " + std::to_string(nbytes));
    }
    auto r = widen_to_f32(view_of(st_dtype::bf16, 4, bytes.data(), 16), "w.safetensors");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().code == errc::corrupt);
  }
}
