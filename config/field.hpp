#pragma once
/// Field constraints used by every config section's `visit()`.
///
/// A section lists its fields once:
///   template <class V> void visit(V&& v) { v("port", port, range{1, 65535}, "TCP port"); }
/// and that one list drives TOML loading, command-line overrides, validation and printing.
/// Field types: bool, int, double, std::string, and enums (config/enum_field.hpp).

#include <initializer_list>
#include <string_view>

namespace sluice::config {

/// Closed numeric range [min, max] for an int or double field.
struct range {
  double min;
  double max;
};

/// A string field must equal one of `allowed`.
struct one_of {
  std::initializer_list<std::string_view> allowed;
};

/// A string field with no constraint other than being non-empty.
struct non_empty {};

/// A string field with no constraint at all (may be empty, e.g. an optional path).
struct any_string {};

/// A bool field has no constraint.
struct any_bool {};

/// A string field holding a comma-separated list of names (may be empty); names have no
/// spaces or control characters inside.
struct name_list {};

}  // namespace sluice::config
