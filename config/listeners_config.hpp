#pragma once
#include <string>

#include "config/field.hpp"

namespace sluice::config {

/// [listeners]: the ports of the field's protocols (net/ws_routes.hpp), each speaking only its
/// protocol on any path, beside the main port ([server], which also serves each of them on a
/// path: /funasr, /sherpa, /vosk). Each listens on server.host, shares the main port's TLS and
/// limits ([server]) except its own connection limit. A port of 0 takes any free port (tests);
/// a listener that is not enabled is not bound.
struct listeners_config {
  /// FunASR runtime WebSocket (FunASR's clients default to 10095).
  bool funasr = true;
  int funasr_port = 10095;
  int funasr_max_connections = 256;
  /// sherpa-onnx streaming WebSocket (its clients default to 6006).
  bool sherpa = true;
  int sherpa_port = 6006;
  int sherpa_max_connections = 256;
  /// Sample rate of the float32 samples sherpa-onnx clients send (its server's --sample-rate).
  int sherpa_sample_rate = 16000;
  /// Vosk server WebSocket (its clients default to 2700).
  bool vosk = true;
  int vosk_port = 2700;
  int vosk_max_connections = 256;

  template <class V>
  void visit(V&& v) {
    v("funasr", funasr, any_bool{}, "serve the FunASR protocol on its own port");
    v("funasr_port", funasr_port, range{0, 65535}, "its port (0: any free port)");
    v("funasr_max_connections", funasr_max_connections, range{1, 1000000}, "open connections at once on it");
    v("sherpa", sherpa, any_bool{}, "serve the sherpa-onnx streaming protocol on its own port");
    v("sherpa_port", sherpa_port, range{0, 65535}, "its port (0: any free port)");
    v("sherpa_max_connections", sherpa_max_connections, range{1, 1000000}, "open connections at once on it");
    v("sherpa_sample_rate", sherpa_sample_rate, range{8000, 48000}, "rate of the float32 samples its clients send (Hz)");
    v("vosk", vosk, any_bool{}, "serve the Vosk protocol on its own port");
    v("vosk_port", vosk_port, range{0, 65535}, "its port (0: any free port)");
    v("vosk_max_connections", vosk_max_connections, range{1, 1000000}, "open connections at once on it");
  }
  std::string check() const {
    // Two enabled listeners on one fixed port: the second could never bind.
    const struct { bool on; int port; const char* name; } ls[] = {
        {funasr, funasr_port, "funasr_port"}, {sherpa, sherpa_port, "sherpa_port"}, {vosk, vosk_port, "vosk_port"}};
    for (const auto& a : ls)
      for (const auto& b : ls)
        if (&a < &b && a.on && b.on && a.port != 0 && a.port == b.port)
          return std::string(a.name) + " and " + b.name + " are both " + std::to_string(a.port);
    return {};
  }
};

}  // namespace sluice::config
