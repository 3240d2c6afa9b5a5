#pragma once
/// Settings of the CTC decoders: the [decoder] config section (config/decoder_config.hpp).

#include "config/decoder_config.hpp"
#include "config/error.hpp"

namespace sluice::moe {

using decoder_options = config::decoder_config;

/// Every field inside its range and check() passing, else errc::invalid_config naming the field.
result<void> validate(const decoder_options& opts);

}  // namespace sluice::moe
