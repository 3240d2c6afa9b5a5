#pragma once
/// The RTP ports of [sip] rtp_port_min..rtp_port_max, handed out one even port per stream (the
/// odd one above is left for its RTCP). Thread-safe. A port taken but found in use by another
/// program (bind fails) is given back and the next one tried by the caller.

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace sluice::net::sip {

class port_pool {
 public:
  port_pool(int min_port, int max_port);
  /// A free even port, or nullopt when every one is taken. Round-robin, so that a port just
  /// given back is reused last (late packets of an old call do not reach a new one).
  std::optional<uint16_t> acquire();
  void release(uint16_t port);
  std::size_t capacity() const { return in_use_.size(); }
  std::size_t in_use() const;

 private:
  mutable std::mutex mu_;
  int first_;                 // lowest even port
  std::vector<bool> in_use_;  // per even port
  std::size_t next_ = 0;
  std::size_t used_ = 0;
};

}  // namespace sluice::net::sip
