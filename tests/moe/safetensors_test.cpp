// The safetensors reader on hand-built files: what it accepts and the precise errors for
// everything it must reject.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "moe/safetensors.hpp"

using namespace sluice;
using namespace sluice::moe;

namespace {

// A file: u64 LE header length, the header text, then `data`.
std::vector<std::byte> make_file(const std::string& header, const std::vector<std::byte>& data, int64_t claimed = -1) {
  std::vector<std::byte> out(8);
  const uint64_t n = claimed >= 0 ? static_cast<uint64_t>(claimed) : header.size();
  std::memcpy(out.data(), &n, 8);
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<std::byte> floats(std::initializer_list<float> v) {
  std::vector<std::byte> out(v.size() * 4);
  std::memcpy(out.data(), v.begin(), out.size());
  return out;
}

std::string error_of(const std::string& header, const std::vector<std::byte>& data, int64_t claimed = -1) {
  auto f = safetensors_file::parse(make_file(header, data, claimed), "t.safetensors");
  return f ? std::string("(accepted)") : f.error().message;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("loader") {
  TEST_CASE("safetensors: a valid file reads back, with metadata, unaligned views and empty tensors") {
    // A 3-byte pad after the header leaves the floats unaligned in memory.
    const std::string header =
        R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[11,19]},"a":{"dtype":"I32","shape":[1,1],"data_offsets":[3,7]},)"
        R"("e":{"dtype":"F32","shape":[0,4],"data_offsets":[19,19]},"__metadata__":{"format":"x"}})";
    auto data = std::vector<std::byte>(3);
    int32_t seven = 7;
    for (int i = 0; i < 4; ++i) data.push_back(reinterpret_cast<std::byte*>(&seven)[i]);
    data.resize(11);
    auto fl = floats({1.5f, -2.0f});
    data.insert(data.end(), fl.begin(), fl.end());
    auto f = safetensors_file::parse(make_file(header, data), "t");
    REQUIRE_MESSAGE(f.has_value(), f.error().message);
    REQUIRE(f->tensors().size() == 3);
    CHECK(f->tensors()[0].name == "a");  // sorted by name
    CHECK(f->metadata().at("format") == "x");
    CHECK(*f->read_f32("b") == std::vector<float>{1.5f, -2.0f});
    CHECK(*f->read_i32("a") == std::vector<int32_t>{7});
    CHECK(f->find("e")->numel() == 0);
    CHECK(f->find("a")->shape_string() == "[1, 1]");
    CHECK(contains(f->read_f32("a").error().message, "'a' is I32, expected F32"));
    CHECK(contains(f->read_f32("zz").error().message, "no tensor 'zz'"));
  }

  TEST_CASE("safetensors: every structural problem is a precise error") {
    const auto data = floats({1, 2, 3, 4});
    CHECK(contains(error_of("", {}, 0), "not valid JSON"));
    {
      auto f = safetensors_file::parse(std::vector<std::byte>(5), "t");
      REQUIRE_FALSE(f.has_value());
      CHECK(f.error().code == errc::truncated);
      CHECK(contains(f.error().message, "too short for the 8-byte header length"));
    }
    const std::string ok = R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
    CHECK(error_of(ok, data) == "(accepted)");
    CHECK(contains(error_of(ok, data, 1000), "header length 1000 goes past the end of the file"));
    CHECK(contains(error_of(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]})", data), "not valid JSON"));
    CHECK(contains(error_of(R"([1,2])", data), "not a JSON object"));
    CHECK(contains(error_of(R"({"x":{"dtype":"Q4","shape":[4],"data_offsets":[0,16]}})", data), "'x': unknown dtype 'Q4'"));
    CHECK(contains(error_of(R"({"x":{"dtype":"F32","shape":[5],"data_offsets":[0,20]}})", data),
                   "'x': data_offsets [0,20] go past the end of the data (16 bytes"));
    CHECK(contains(error_of(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data),
                   "'x': shape [3] F32 needs 12 bytes but data_offsets [0,16] hold 16"));
    CHECK(contains(error_of(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,16]}})", data),
                   "not a non-negative integer"));
    CHECK(contains(error_of(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[16,0]}})", data), "0 <= begin <= end"));
    CHECK(contains(error_of(R"({"x":{"dtype":"F32","shape":[4]}})", data), "data_offsets"));
    CHECK(contains(error_of(R"({"x":{"shape":[4],"data_offsets":[0,16]}})", data), "no \"dtype\""));
    CHECK(contains(error_of(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                            R"("y":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                            data),
                   "tensors 'x' [0, 12) and 'y' [8, 16) overlap"));
    CHECK(contains(error_of(R"({"x":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,16]}})", data),
                   "too large"));
    CHECK(contains(error_of(R"({"__metadata__":{"a":1}})", data), "__metadata__ value 'a' is not a string"));
    CHECK(safetensors_file::load("/nonexistent/w.safetensors").error().code == errc::io);
  }
}
