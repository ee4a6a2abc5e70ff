// A parameter-server worker (see async_trainer.hpp): trains on its slice of every epoch
// with its own batch, takes local SGD steps through its optimizer between pulls, pulls
// every n_fetch steps and pushes its summed gradient every n_push steps (and at each
// epoch's end), and pauses for checkpoints when server 0 asks. Its parameters and pending
// gradient live on its backend's device; pulls and pushes go through host mirrors of them
// (no copy on the CPU backends).
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hpdl/core/host_mirror.hpp"
#include "hpdl/data/sampler.hpp"
#include "hpdl/nn/model.hpp"
#include "hpdl/train/local_step.hpp"
#include "hpdl/train/passes.hpp"
#include "hpdl/train/ps_checkpoint.hpp"
#include "hpdl/train/ps_context.hpp"
#include "hpdl/train/worker_report.hpp"

namespace hpdl {

class PsWorker {
 public:
  PsWorker(PsContext& ctx, Model& model, const Splits& splits);

  // Trains to the end (true), or until a checkpoint stopped the run (false).
  bool work();

  // Where it stands and what it summed per epoch (what a checkpoint carries).
  const WorkerState& position() const { return pos_; }
  // Its part of the checkpoint collective at (epoch, step_in_epoch): sends rank 0 its
  // position, local parameters and (if any) the change it has not pushed yet.
  void send_checkpoint(int64_t epoch, int64_t step_in_epoch);
  // Its position, local parameters and pending change from a checkpoint; with r (the
  // checkpoint is of another worker count), its new position under that rule.
  void restore(const Checkpoint& c, const WorkerRedistribution* r = nullptr);
  // Push/pull counts, times, the longest push and the staleness histogram.
  WorkerReport report() const;
  int index() const { return index_; }  // this worker's index (rank - servers in the job)

 private:
  // One training step at the worker's position (step s of the epoch).
  void train_step(ShardPlan& plan, int64_t epoch, int64_t s);
  // Counts a finished epoch (and its progress figures) on server 0.
  void count_epoch(int64_t epoch);
  // Until every worker is done, answers checkpoint requests. False = a checkpoint stopped
  // the run.
  bool wait_for_the_others(int64_t epoch);
  // A checkpoint was requested (and a local stop signal was reported to server 0).
  // request_pending() is the same without arming the watchdog (the caller does).
  bool checkpoint_requested();
  bool request_pending();
  // Count itself paused (what is pending stays), join the checkpoint. True = stop.
  bool pause_for_checkpoint(int64_t epoch, int64_t step_in_epoch);
  void pull();
  void push();

  PsContext& ctx_;
  const DistributedConfig& dist_;
  Model& model_;
  const Splits splits_;  // pointers to the caller's splits
  ParamShards& shards_;
  const int index_;  // worker index (rank - servers)
  // The servers, as the watchdog names them when a one-sided wait on them expires; the
  // first worker reports (one line a job).
  const std::string servers_name_;
  const AwaitedRanks on_servers_;
  ShardPlan plan_;
  // Its step: the schedule over its own steps; the optimizer (SGD without momentum: the
  // config was checked) keeps it learning between pulls.
  LocalStep local_;

  WorkerState pos_;                        // with the steps summed into pending_
  float lr_ = 0;                           // the learning rate of the current step
  Buffer pending_;                         // gradient sum since the last push, on the device
  HostMirror pending_host_, params_host_;  // what pushes read and pulls write
  std::vector<int64_t> prev_versions_;
  RmaStats rma_;
  double work_s_ = 0;
  int64_t epoch_staleness_ = 0, epoch_pushes_ = 0;  // this epoch's, for server 0's progress
  int64_t handled_ = 0;                             // checkpoint requests answered
  bool signal_reported_ = false;
  bool must_pull_ = false;  // redistributed: pull before the first step
};

}  // namespace hpdl
