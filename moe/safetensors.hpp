#pragma once
/// Reader of the safetensors format: an u64 little-endian header length N, N bytes of JSON
/// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}, then
/// the raw little-endian tensor bytes (offsets are relative to the end of the header).
///
/// The whole file is mapped (or, from parse(), held in the buffer given) by the safetensors_file;
/// tensors are views into it and stay valid as long as the file object (moving it keeps them
/// valid). Everything
/// is bounds-checked on load; errors name the file, the tensor and the problem.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"
#include "config/mapped_file.hpp"

namespace sluice::moe {

/// The dtypes of the safetensors specification.
enum class st_dtype { boolean, u8, i8, f8_e5m2, f8_e4m3, i16, u16, f16, bf16, i32, u32, f32, f64, i64, u64 };

/// The spelling in the header ("F32", "I32", ...).
const char* to_string(st_dtype dtype);
/// Bytes per element.
std::size_t dtype_size(st_dtype dtype);

struct tensor_view {
  std::string name;
  st_dtype dtype = st_dtype::f32;
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;  ///< into the owning safetensors_file's buffer; may be unaligned
  std::size_t nbytes = 0;           ///< = numel() * dtype_size(dtype)

  int64_t numel() const;
  /// "[4, 36]"
  std::string shape_string() const;
};

class safetensors_file {
 public:
  /// Reads and validates `path`. errc::io when it cannot be read; errc::truncated when the
  /// header or a tensor runs past the end of the file; errc::corrupt for a malformed header;
  /// errc::unsupported for an unknown dtype.
  static result<safetensors_file> load(const std::string& path);

  /// Validates `bytes` (a whole file); `source` names it in messages.
  static result<safetensors_file> parse(std::vector<std::byte> bytes, std::string source);

  /// All tensors, sorted by name.
  const std::vector<tensor_view>& tensors() const { return tensors_; }
  /// The tensor called `name`, or nullptr.
  const tensor_view* find(std::string_view name) const;
  /// The "__metadata__" strings (empty when the header has none).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// Where the bytes came from (the path), for messages.
  const std::string& source() const { return source_; }

  /// A copy of tensor `name` as f32 values (numel() of them); errc::invalid_argument naming the
  /// tensor when it is missing or not F32.
  result<std::vector<float>> read_f32(std::string_view name) const;
  /// The same for I32.
  result<std::vector<int32_t>> read_i32(std::string_view name) const;

 private:
  static result<safetensors_file> parse_held(safetensors_file f);
  std::span<const std::byte> all() const { return file_.size() ? file_.bytes() : std::span<const std::byte>(bytes_); }

  std::string source_;
  config::mapped_file file_;      // the whole file, from load(); views point into it
  std::vector<std::byte> bytes_;  // or the whole file, from parse()
  std::vector<tensor_view> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace sluice::moe
