// What the parameter server's two roles (PsServer, PsWorker) share with the trainer that
// runs them (AsyncTrainer): the run's settings, the shards, the bound on every wait, the
// training clock, and the checkpoint collective that every rank joins.
#pragma once
#include <cstdint>
#include <functional>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/core/timeline.hpp"
#include "hpdl/dist/param_shards.hpp"
#include "hpdl/train/checkpointer.hpp"
#include "hpdl/train/trainer_config.hpp"

namespace hpdl {

struct PsContext {
  const TrainerConfig& cfg;
  const Comm& comm;
  ParamShards& shards;
  Watchdog& watchdog;
  Profiler* prof = nullptr;
  Checkpointer* ckpt = nullptr;  // null: nothing can ask for a checkpoint
  double t0 = 0;                 // the training clock's zero (wall_s() seconds)
  // The checkpoint collective at this rank's position; true = the run stops here.
  std::function<bool(int64_t epoch, int64_t step_in_epoch)> checkpoint;

  int workers() const { return comm.size() - shards.servers(); }
  // Seconds on the host's steady clock (differences only).
  static double wall_s() { return 1e-9 * static_cast<double>(HostTimeline::now()); }
  double elapsed_s() const { return wall_s() - t0; }
};

}  // namespace hpdl
