#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [log]: process-wide logging.
struct log_config {
  std::string level = "info";

  template <class V>
  void visit(V&& v) {
    v("level", level, one_of{{"trace", "debug", "info", "warn", "error", "off"}},
      "spdlog level for every sluice logger");
  }
  /// Cross-field rules; empty string when valid.
  std::string check() const { return {}; }
};

}  // namespace sluice::config
