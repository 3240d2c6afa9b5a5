#include "moe/decoder/decoder_options.hpp"

#include "config/constraints.hpp"

namespace sluice::moe {

result<void> validate(const decoder_options& opts) {
  if (auto why = config::section_problem(opts); !why.empty()) return fail(errc::invalid_config, "decoder." + why);
  return {};
}

}  // namespace sluice::moe
