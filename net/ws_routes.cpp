#include "net/ws_routes.hpp"

#include "net/protocols/funasr_protocol.hpp"
#include "net/protocols/sherpa_protocol.hpp"
#include "net/protocols/sluice_protocol.hpp"
#include "net/protocols/vosk_protocol.hpp"

namespace sluice::net {

std::unique_ptr<ws_protocol> protocol_for_path(std::string_view path) {
  if (path == "/v1/stream") return make_sluice_protocol();
  if (path == "/funasr" || path == "/") return make_funasr_protocol();
  if (path == "/sherpa") return make_sherpa_protocol();
  if (path == "/vosk") return make_vosk_protocol();
  return nullptr;
}

std::unique_ptr<ws_protocol> protocol_for_listener(ws_listener l) {
  switch (l) {
    case ws_listener::funasr: return make_funasr_protocol();
    case ws_listener::sherpa: return make_sherpa_protocol();
    case ws_listener::vosk: return make_vosk_protocol();
    case ws_listener::main: break;
  }
  return nullptr;
}

std::string_view listener_name(ws_listener l) {
  switch (l) {
    case ws_listener::main: return "main";
    case ws_listener::funasr: return "funasr";
    case ws_listener::sherpa: return "sherpa";
    case ws_listener::vosk: return "vosk";
  }
  return "?";
}

}  // namespace sluice::net
