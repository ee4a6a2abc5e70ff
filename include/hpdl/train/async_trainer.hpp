// Asynchronous training against a parameter server (Downpour SGD, DC-ASGD). Ranks
// 0..S-1 serve the parameter shards (ParamShards): their loop applies every worker's push
// through the update rule and serves every pull, in arrival order. The other ranks are
// workers, each training on its own slice of every epoch's data:
//   every n_fetch steps   pull the parameters (the server keeps what it handed out: w_bak)
//   every step            gradient of the worker's batch; local SGD step; accumulate g
//   every n_push steps    push g; the servers apply Downpour  w <- w - lr*g
//                                                  or DC-ASGD w <- w - lr*(g + lambda*g*g*(w -
//                                                  w_bak))
// and at the end of each epoch the pending gradient is pushed. Server 0 snapshots the
// parameters whenever the workers together have finished another epoch, and once all
// are done; after training every rank evaluates the snapshots together, so the metrics
// have one row per epoch as in sync mode, timed without the evaluations.
// Checkpoints: server 0 decides (a stop signal on any rank, every `every_s` seconds, every
// `every_steps` server updates) and raises kRequest; each worker sees it at its next step
// (done workers while they wait for the end) and pauses, keeping what it has not pushed yet;
// when all are paused (every push they made applied) every rank enters one collective in
// which rank 0 gathers every server's shard and per-worker rule state (DC-ASGD's backups and
// mean squares) and every worker's position, local parameters and pending change, writes
// the checkpoint, and all carry on, or stop after a signal. A checkpoint therefore changes
// nothing in the run: one worker resumed equals it uninterrupted, bit for bit.
// Workers that drop out: server 0 drops a worker silent for half of run.watchdog_s (while
// distributed.min_workers would be left), the servers stop serving it, and at the next
// checkpoint or the end every remaining rank leaves it out of the run's communicator; the
// run finishes without it (docs/parameter_server.md, "Workers that drop out").
//
// Files: ps_server.hpp (a server: its loop, snapshots, progress, when to checkpoint),
// ps_worker.hpp (a worker: its loop, local step, pull, push), async_trainer.cpp (start, the
// checkpoint collective, resuming, evaluation of the snapshots); the rules are
// update_rules.hpp, the checkpointed state and its transfer ps_checkpoint.hpp, what the
// roles share ps_context.hpp.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "hpdl/nn/model.hpp"
#include "hpdl/optim/lr_schedule.hpp"
#include "hpdl/train/model_keeper.hpp"
#include "hpdl/train/passes.hpp"
#include "hpdl/train/ps_context.hpp"
#include "hpdl/train/ps_server.hpp"
#include "hpdl/train/ps_worker.hpp"
#include "hpdl/train/trainer.hpp"
#include "hpdl/train/worker_report.hpp"

namespace hpdl {

class AsyncTrainer final : public Trainer {
 public:
  // prof may be null (profiling off).
  // comm: the job's; once the servers drop a worker (see ps_server.hpp) it leaves that rank
  // out (Comm::leave_out), at the next collective every remaining rank joins.
  AsyncTrainer(const TrainerConfig& cfg, Comm& comm, Model& model, const Splits& splits,
               Watchdog& watchdog, Profiler* prof = nullptr);
  ~AsyncTrainer() override;

  // Collective. Afterwards the model holds the final parameters on every rank, unless a
  // stop signal ended training at a checkpoint (stopped_by() != 0, no history). With `from`,
  // continues that checkpoint (the model must already hold its parameters).
  std::vector<EpochStats> run(const TrainHooks& hooks, Checkpointer* ckpt = nullptr,
                              const Checkpoint* from = nullptr) override;
  int stopped_by() const override { return stopped_by_; }

  const ConfusionMatrix& last_confusion() const override { return keeper_.confusion(); }
  const FinalModel& final_model() const override { return keeper_.final_model(); }
  int64_t total_pushes() const { return total_pushes_; }
  int64_t steps() const override { return total_pushes_; }
  // This worker's push/pull counts, times and staleness histogram (null on servers).
  WorkerReport worker_report() const;  // a server's: empty
  // Rank 0: every worker's pushes applied when the first worker finished (worker order).
  std::vector<int64_t> pushes_at_first_done() const;
  // Rank 0: the workers the servers dropped (empty elsewhere).
  std::vector<PsServer::Left> workers_left() const;

 private:
  // Collective: rank 0 writes the checkpoint from every server's shard and state and every
  // worker's. Returns whether the run stops here (on every rank).
  bool checkpoint_collective(int64_t epoch, int64_t step_in_epoch);
  void restore(const Checkpoint& c);
  // Collective over the ranks left: the run's Comm leaves out the workers server 0 has
  // dropped since the last call (a dropped worker that is still running throws LeftJob).
  void leave_out_dropped();
  std::vector<EpochStats> evaluate_snapshots(const TrainHooks& hooks);

  const TrainerConfig cfg_;
  Comm& comm_;
  Model& model_;
  Watchdog& watchdog_;
  const int64_t train_rows_;
  ParamShards shards_;
  PsContext ctx_;
  LrSchedule schedule_;               // worker 0's, for the rate an epoch's row reports
  ModelKeeper keeper_;                // the snapshots judged, the run's model kept
  std::unique_ptr<PsServer> server_;  // one of the two roles
  std::unique_ptr<PsWorker> worker_;
  int stopped_by_ = 0;
  double t_before_ = 0;  // training time before a resume
  int64_t total_pushes_ = 0;
  std::vector<int> left_out_;  // workers the Comm leaves out
};

}  // namespace hpdl
