#include "kernels/backend.hpp"

namespace sluice::kernels {

const char* to_string(status s) {
  switch (s) {
    case status::ok: return "ok";
    case status::unavailable: return "unavailable";
    case status::invalid_argument: return "invalid argument";
    case status::out_of_memory: return "out of memory";
    case status::device_error: return "device error";
  }
  return "?";
}

}  // namespace sluice::kernels
