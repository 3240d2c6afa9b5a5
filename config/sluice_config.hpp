#pragma once
/// The whole engine configuration: one typed struct per TOML section.
///
/// Sources are applied in order: built-in defaults, then a TOML file, then `section.key=value`
/// overrides (from the command line). Every source is checked as it is applied, and the result
/// is validated as a whole; errors name the key, the value, and what is allowed.

#include <string>
#include <string_view>
#include <vector>

#include "config/audio_config.hpp"
#include "config/audiosocket_config.hpp"
#include "config/auth_config.hpp"
#include "config/calls_config.hpp"
#include "config/decoder_config.hpp"
#include "config/engine_config.hpp"
#include "config/error.hpp"
#include "config/fbank_config.hpp"
#include "config/listeners_config.hpp"
#include "config/log_config.hpp"
#include "config/model_config.hpp"
#include "config/postproc_config.hpp"
#include "config/rtsp_config.hpp"
#include "config/server_config.hpp"
#include "config/sip_config.hpp"
#include "config/upload_config.hpp"
#include "config/vad_config.hpp"

namespace sluice::config {

struct sluice_config {
  log_config log;
  audio_config audio;
  vad_config vad;
  endpoint_config endpoint;
  segment_config segment;
  fbank_config fbank;
  model_config model;
  decoder_config decoder;
  postproc_config postproc;
  engine_config engine;
  server_config server;
  listeners_config listeners;
  upload_config upload;
  auth_config auth;
  audiosocket_config audiosocket;
  sip_config sip;
  rtsp_config rtsp;
  calls_config calls;

  /// Calls `v(section_name, section)` for every section, in file order.
  template <class V>
  void visit_sections(V&& v) {
    v("log", log);
    v("audio", audio);
    v("vad", vad);
    v("endpoint", endpoint);
    v("segment", segment);
    v("fbank", fbank);
    v("model", model);
    v("decoder", decoder);
    v("postproc", postproc);
    v("engine", engine);
    v("server", server);
    v("listeners", listeners);
    v("upload", upload);
    v("auth", auth);
    v("audiosocket", audiosocket);
    v("sip", sip);
    v("rtsp", rtsp);
    v("calls", calls);
  }
};

/// Applies the TOML document `text` (named `source` in messages) on top of `cfg`.
/// Unknown sections/keys, wrong types and out-of-range values are errors.
result<void> apply_toml(sluice_config& cfg, std::string_view text, std::string_view source);

/// Reads and applies the TOML file at `path`.
result<void> apply_toml_file(sluice_config& cfg, const std::string& path);

/// Applies one `section.key=value` override; `value` is parsed as the field's type.
result<void> apply_override(sluice_config& cfg, std::string_view assignment);

/// Checks every field's constraint and every section's cross-field rules.
result<void> validate(sluice_config& cfg);

/// The config as a TOML document with a comment per key (what `sluice config` prints).
std::string to_toml(sluice_config& cfg);

/// Every key as "section.key", for help text.
std::vector<std::string> known_keys(sluice_config& cfg);

}  // namespace sluice::config
