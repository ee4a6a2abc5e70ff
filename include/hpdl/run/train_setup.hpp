// `hpdl train`'s set-up: the config, the run directory, the data, the model, the checkpoint
// to continue from and how a rank waits, in stages that every rank passes or fails together
// (Comm::agree). train_command.cpp trains with it.
#pragma once
#include <memory>
#include <string>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/nn/model.hpp"
#include "hpdl/run/commands.hpp"
#include "hpdl/run/data_splits.hpp"
#include "hpdl/run/run_dir.hpp"
#include "hpdl/run/wait_policy.hpp"
#include "hpdl/train/checkpoint.hpp"

namespace hpdl {

// Everything training needs, built in stages that all ranks pass or fail together.
struct TrainSetup {
  Config cfg;
  std::unique_ptr<RunDir> out;  // rank 0 only
  DataSplits data;
  int64_t local_batch = 0;
  std::unique_ptr<Model> model;
  std::string checkpoint_path;       // rank 0: where this run writes checkpoints
  std::unique_ptr<Checkpoint> from;  // the checkpoint this run continues, on every rank
  std::string resumed_from;          // rank 0: its file
  std::string fallback_reason;       // rank 0: why --resume took checkpoint.prev.h5 ("" if not)
  ChosenWait wait;                   // run.wait as this rank decided it
};

// Collective: every stage passes on every rank or the job ends with one agreed line.
TrainSetup set_up(const TrainArgs& args, Comm& comm, Watchdog& watchdog);

}  // namespace hpdl
