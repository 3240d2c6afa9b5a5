#pragma once
/// Field constraints used by every config section's `visit()`.
///
/// A section lists its fields once:
///   template <class V> void visit(V&& v) { v("port", port, range{1, 65535}, "TCP port"); }
/// and that one list drives TOML loading, command-line overrides, validation and printing.
/// Field types: bool, int, double, std::string.

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

/// A string field with no constraint (may be empty).
struct any_string {};

/// A bool field has no constraint.
struct any_bool {};

}  // namespace sluice::config
