#include "moe/safetensors.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

namespace sluice::moe {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; so must we be");

constexpr std::size_t length_prefix_bytes = 8;
// The format's own limit on the header; anything bigger is a corrupt length, not a header.
constexpr uint64_t max_header_bytes = 100ull << 20;
// Bounds each dimension so that products of a few of them cannot overflow 64 bits.
constexpr uint64_t max_dim = 1ull << 40;

struct dtype_entry {
  st_dtype dtype;
  const char* name;
  std::size_t size;
};

constexpr std::array<dtype_entry, 15> dtype_table{{
    {st_dtype::boolean, "BOOL", 1}, {st_dtype::u8, "U8", 1},     {st_dtype::i8, "I8", 1},
    {st_dtype::f8_e5m2, "F8_E5M2", 1}, {st_dtype::f8_e4m3, "F8_E4M3", 1}, {st_dtype::i16, "I16", 2},
    {st_dtype::u16, "U16", 2},      {st_dtype::f16, "F16", 2},   {st_dtype::bf16, "BF16", 2},
    {st_dtype::i32, "I32", 4},      {st_dtype::u32, "U32", 4},   {st_dtype::f32, "F32", 4},
    {st_dtype::f64, "F64", 8},      {st_dtype::i64, "I64", 8},   {st_dtype::u64, "U64", 8},
}};

const dtype_entry* find_dtype(std::string_view name) {
  for (const auto& d : dtype_table)
    if (name == d.name) return &d;
  return nullptr;
}

// A non-negative JSON integer, or nothing.
bool get_count(const nlohmann::json& j, uint64_t& out) {
  if (j.is_number_unsigned()) {
    out = j.get<uint64_t>();
    return true;
  }
  if (j.is_number_integer() && j.get<int64_t>() >= 0) {
    out = static_cast<uint64_t>(j.get<int64_t>());
    return true;
  }
  return false;
}

struct entry {
  tensor_view view;
  uint64_t begin = 0, end = 0;
};

result<entry> parse_entry(const std::string& where, const std::string& name, const nlohmann::json& j,
                          uint64_t data_size) {
  const std::string at = where + ": tensor '" + name + "'";
  if (!j.is_object()) return fail(errc::corrupt, at + ": header entry is not a JSON object");
  const auto dt = j.find("dtype");
  if (dt == j.end() || !dt->is_string()) return fail(errc::corrupt, at + ": no \"dtype\" string");
  const auto* d = find_dtype(dt->get<std::string>());
  if (!d) return fail(errc::unsupported, at + ": unknown dtype '" + dt->get<std::string>() + "'");
  const auto sh = j.find("shape");
  if (sh == j.end() || !sh->is_array()) return fail(errc::corrupt, at + ": no \"shape\" array");
  const auto off = j.find("data_offsets");
  if (off == j.end() || !off->is_array() || off->size() != 2)
    return fail(errc::corrupt, at + ": \"data_offsets\" must be an array [begin, end]");

  entry e;
  e.view.name = name;
  e.view.dtype = d->dtype;
  uint64_t numel = 1;
  for (const auto& dim : *sh) {
    uint64_t v = 0;
    if (!get_count(dim, v) || v > max_dim)
      return fail(errc::corrupt, at + ": shape " + sh->dump() + " has a dimension that is not a non-negative integer");
    if (v != 0 && numel > std::numeric_limits<uint64_t>::max() / v / d->size)
      return fail(errc::corrupt, at + ": shape " + sh->dump() + " is too large");
    numel *= v;
    e.view.shape.push_back(static_cast<int64_t>(v));
  }
  if (!get_count((*off)[0], e.begin) || !get_count((*off)[1], e.end) || e.begin > e.end)
    return fail(errc::corrupt, at + ": data_offsets " + off->dump() + " must be integers with 0 <= begin <= end");
  if (e.end > data_size)
    return fail(errc::truncated, at + ": data_offsets " + off->dump() + " go past the end of the data (" +
                                     std::to_string(data_size) + " bytes after the header): the file is truncated");
  const uint64_t need = numel * d->size;
  if (e.end - e.begin != need)
    return fail(errc::corrupt, at + ": shape " + e.view.shape_string() + " " + d->name + " needs " + std::to_string(need) +
                                   " bytes but data_offsets " + off->dump() + " hold " + std::to_string(e.end - e.begin));
  e.view.nbytes = static_cast<std::size_t>(need);
  return e;
}

}  // namespace

const char* to_string(st_dtype dtype) {
  for (const auto& d : dtype_table)
    if (d.dtype == dtype) return d.name;
  return "?";
}

std::size_t dtype_size(st_dtype dtype) {
  for (const auto& d : dtype_table)
    if (d.dtype == dtype) return d.size;
  return 0;
}

int64_t tensor_view::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string tensor_view::shape_string() const {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

result<safetensors_file> safetensors_file::load(const std::string& path) {
  // Mapped, not read into a zeroed buffer: the loader copies (packs) every tensor it uses, so
  // the file's bytes are read once, from the page cache.
  auto file = config::mapped_file::open(path);
  if (!file) return tl::unexpected(file.error());
  safetensors_file f;
  f.source_ = path;
  f.file_ = std::move(*file);
  return parse_held(std::move(f));
}

result<safetensors_file> safetensors_file::parse(std::vector<std::byte> bytes, std::string source) {
  safetensors_file f;
  f.source_ = std::move(source);
  f.bytes_ = std::move(bytes);
  return parse_held(std::move(f));
}

result<safetensors_file> safetensors_file::parse_held(safetensors_file f) {
  const std::span<const std::byte> bytes = f.all();
  const std::string& source = f.source_;
  if (bytes.size() < length_prefix_bytes)
    return fail(errc::truncated, source + ": " + std::to_string(bytes.size()) +
                                     " bytes, too short for the 8-byte header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), sizeof header_len);
  const uint64_t rest = bytes.size() - length_prefix_bytes;
  if (header_len > rest)
    return fail(errc::truncated, source + ": header length " + std::to_string(header_len) +
                                     " goes past the end of the file (" + std::to_string(rest) +
                                     " bytes after the length)");
  if (header_len > max_header_bytes)
    return fail(errc::corrupt, source + ": header length " + std::to_string(header_len) + " is over the 100 MiB limit");

  const auto* text = reinterpret_cast<const char*>(bytes.data()) + length_prefix_bytes;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, text + header_len);
  } catch (const nlohmann::json::exception& e) {
    return fail(errc::corrupt, source + ": the header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) return fail(errc::corrupt, source + ": the header is not a JSON object");

  const uint64_t data_size = rest - header_len;
  std::vector<entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return fail(errc::corrupt, f.source_ + ": __metadata__ is not a JSON object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          return fail(errc::corrupt, f.source_ + ": __metadata__ value '" + m.key() + "' is not a string");
        f.metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    auto e = parse_entry(f.source_, it.key(), *it, data_size);
    if (!e) return tl::unexpected(e.error());
    entries.push_back(std::move(*e));
  }

  // Tensors may leave gaps (alignment) but never share bytes.
  std::vector<const entry*> by_offset;
  for (const auto& e : entries)
    if (e.end > e.begin) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const entry* a, const entry* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const entry& a = *by_offset[i - 1];
    const entry& b = *by_offset[i];
    if (b.begin < a.end)
      return fail(errc::corrupt, f.source_ + ": tensors '" + a.view.name + "' [" + std::to_string(a.begin) + ", " +
                                     std::to_string(a.end) + ") and '" + b.view.name + "' [" + std::to_string(b.begin) +
                                     ", " + std::to_string(b.end) + ") overlap");
  }

  const std::byte* data = bytes.data() + length_prefix_bytes + header_len;
  for (auto& e : entries) {
    e.view.data = data + e.begin;
    f.tensors_.push_back(std::move(e.view));
  }
  std::sort(f.tensors_.begin(), f.tensors_.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return f;
}

const tensor_view* safetensors_file::find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const tensor_view& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

namespace {

template <class T>
result<std::vector<T>> read_as(const safetensors_file& f, std::string_view name, st_dtype want) {
  const tensor_view* t = f.find(name);
  if (!t) return fail(errc::invalid_argument, f.source() + ": no tensor '" + std::string(name) + "'");
  if (t->dtype != want)
    return fail(errc::invalid_argument, f.source() + ": tensor '" + t->name + "' is " + to_string(t->dtype) +
                                            ", expected " + to_string(want));
  std::vector<T> out(static_cast<std::size_t>(t->numel()));
  if (t->nbytes) std::memcpy(out.data(), t->data, t->nbytes);
  return out;
}

}  // namespace

result<std::vector<float>> safetensors_file::read_f32(std::string_view name) const {
  return read_as<float>(*this, name, st_dtype::f32);
}

result<std::vector<int32_t>> safetensors_file::read_i32(std::string_view name) const {
  return read_as<int32_t>(*this, name, st_dtype::i32);
}

}  // namespace sluice::moe
