#include "moe/decoder/decoder_options.hpp"

#include <cmath>
#include <type_traits>

namespace sluice::moe {

namespace {

// Checks each visited field against its constraint and keeps the first problem.
struct range_checker {
  std::string problem;

  template <class T, class C>
  void operator()(const char* name, const T& value, const C& constraint, const char* /*help*/) {
    if (!problem.empty()) return;
    if constexpr (std::is_same_v<C, config::range>) {
      const double v = static_cast<double>(value);
      if (!std::isfinite(v) || v < constraint.min || v > constraint.max)
        problem = std::string(name) + " = " + std::to_string(v) + " is outside " +
                  std::to_string(constraint.min) + " .. " + std::to_string(constraint.max);
    }
  }
};

}  // namespace

result<void> validate(const decoder_options& opts) {
  decoder_options copy = opts;  // visit() is non-const by the config convention
  range_checker checker;
  copy.visit(checker);
  if (!checker.problem.empty()) return fail(errc::invalid_config, "decoder: " + checker.problem);
  if (auto why = opts.check(); !why.empty()) return fail(errc::invalid_config, "decoder: " + why);
  return {};
}

}  // namespace sluice::moe
