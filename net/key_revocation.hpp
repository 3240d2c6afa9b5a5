#pragma once
/// The enrolment of a server connection with the server's key_streams (net/auth/key_streams.hpp):
/// a revocation of the connection's key posts `on_key_revoked()` to its executor, holding the
/// session weakly and only while the server's I/O gate is open (a strand must not outlive its
/// io_context). `Session` provides executor() and on_key_revoked() (which guards itself).

#include <memory>
#include <mutex>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "net/server.hpp"

namespace sluice::net {

template <class Session>
std::shared_ptr<void> enrol_for_revocation(const server_state& st, const auth::principal& who, auth::scope needs,
                                           const std::shared_ptr<Session>& s) {
  return st.key_streams->enrol(who, needs, [w = std::weak_ptr<Session>(s), gate = st.io]() noexcept {
    try {
      std::lock_guard lock(gate->mu);
      if (!gate->open) return;
      if (auto alive = w.lock())
        boost::asio::post(alive->executor(), [w] {
          if (auto x = w.lock()) x->on_key_revoked();
        });
    } catch (const std::exception& e) {
      spdlog::error("auth: could not post a key revocation to its connection: {}", e.what());
    }
  });
}

}  // namespace sluice::net
