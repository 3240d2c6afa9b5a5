// libFuzzer target: config/loader (TOML documents and `section.key=value` overrides). In the fuzz
// build toml++ is compiled into sluice_config (TOML_HEADER_ONLY), so its parser is instrumented
// too. Beyond "no crash": every refusal says why, and whatever a document leaves in the config
// survives to_toml -> apply_toml unchanged (what `sluice config` prints can be read back).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/sluice_config.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

using namespace sluice;

namespace {

void check_round_trip(config::sluice_config& cfg) {
  const std::string printed = config::to_toml(cfg);
  config::sluice_config again;
  const auto reread = config::apply_toml(again, printed, "printed");
  fuzz::require(reread.has_value(), "to_toml printed a document apply_toml refuses");
  fuzz::require(config::to_toml(again) == printed, "to_toml -> apply_toml changed the config");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  config::sluice_config cfg;
  if (const auto applied = config::apply_toml(cfg, text, "fuzz.toml"); !applied) {
    fuzz::require_message(applied.error());
  } else {
    if (const auto valid = config::validate(cfg); !valid) fuzz::require_message(valid.error());
    check_round_trip(cfg);
  }

  // The same bytes as command-line overrides, one per line.
  config::sluice_config over;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    if (const auto r = config::apply_override(over, text.substr(start, end - start)); !r)
      fuzz::require_message(r.error());
    start = end + 1;
  }
  check_round_trip(over);
  return 0;
}
