#pragma once
/// An actor system on CAF's deterministic test coordinator, with the engine's message types:
/// the tests decide the order of every message (sched.run(), sched.trigger_timeout()).

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include "actors/system_config.hpp"

namespace sluice::test {

struct deterministic_system {
  actors::engine_system_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;

  deterministic_system()
      : sys(cfg.set("scheduler.policy", caf::atom("testing"))),
        sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {}
};

}  // namespace sluice::test
