// Asynchronous training against a parameter server (Downpour SGD, DC-ASGD). Ranks
// 0..S-1 serve the parameter shards (ParamShards): their loop applies every worker's push
// through the update rule and serves every pull, in arrival order. The other ranks are
// workers, each training on its own slice of every epoch's data:
//   every n_fetch steps   pull the parameters (the server keeps what it handed out: w_bak)
//   every step            gradient of the worker's batch; local SGD step; accumulate g
//   every n_push steps    push g; the servers apply Downpour  w <- w - lr*g
//                                                  or DC-ASGD w <- w - lr*(g + lambda*g*g*(w - w_bak))
// and at the end of each epoch the pending gradient is pushed. Server 0 snapshots the
// parameters whenever the workers together have finished another epoch, and once all
// are done; after training every rank evaluates the snapshots together, so the metrics
// have one row per epoch as in sync mode, timed without the evaluations.
// Checkpoints: server 0 decides (a stop signal on any rank, every `every_s` seconds, every
// `every_steps` server updates) and raises kRequest; each worker sees it at its next step
// (done workers while they wait for the end), pushes what it has pending and pauses; when
// all are paused (their pushes applied) every rank enters one collective in which rank 0
// gathers every server's shard and per-worker rule state (DC-ASGD's backups and mean
// squares) and every worker's position and local parameters, writes the checkpoint, and
// all carry on, or stop after a signal.
//
// Files: ps_server.cpp (the server loop, snapshots, progress, when to checkpoint),
// ps_worker.cpp (the worker loop, pull, push), async_trainer.cpp (start, the checkpoint
// collective, evaluation of the snapshots); the rules are update_rules.hpp, the
// checkpointed state and its transfer ps_checkpoint.hpp. A worker's parameters and pending
// gradient live on its backend's device; pulls and pushes go through host mirrors of them
// (no copy on the CPU backends), and servers hold host memory only.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/core/host_mirror.hpp"
#include "hpdl/core/timeline.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/sampler.hpp"
#include "hpdl/dist/param_shards.hpp"
#include "hpdl/nn/loss.hpp"
#include "hpdl/nn/model.hpp"
#include "hpdl/optim/lr_schedule.hpp"
#include "hpdl/train/checkpointer.hpp"
#include "hpdl/train/finite_guard.hpp"
#include "hpdl/train/model_selection.hpp"
#include "hpdl/train/passes.hpp"
#include "hpdl/train/ps_checkpoint.hpp"
#include "hpdl/train/trainer.hpp"
#include "hpdl/train/update_rules.hpp"

namespace hpdl {

class AsyncTrainer {
 public:
  // prof may be null (profiling off).
  AsyncTrainer(const Config& cfg, const Comm& comm, Model& model, const Splits& splits,
               Watchdog& watchdog, Profiler* prof = nullptr);
  ~AsyncTrainer();

  // Collective. Afterwards the model holds the final parameters on every rank, unless a
  // stop signal ended training at a checkpoint (stopped_by() != 0, no history). With `from`,
  // continues that checkpoint (the model must already hold its parameters).
  std::vector<EpochStats> run(const TrainHooks& hooks, Checkpointer* ckpt = nullptr,
                              const Checkpoint* from = nullptr);
  int stopped_by() const { return stopped_by_; }

  const ConfusionMatrix& last_confusion() const { return evaluator_.confusion(); }
  const FinalModel& final_model() const { return final_; }
  int64_t total_pushes() const { return total_pushes_; }
  // This worker's push/pull counts, times and staleness histogram (null on servers).
  nlohmann::json worker_report() const;
  // Rank 0: every worker's pushes applied when the first worker finished (worker order).
  const std::vector<int64_t>& pushes_at_first_done() const { return pushes_at_first_done_; }

 private:
  struct Snapshot {
    int64_t epoch;
    double t;        // seconds since the start of training
    int64_t pushes;  // updates applied (shard 0's version)
    std::vector<float> params;
  };
  // Seconds on the host's steady clock (differences only).
  static double wall_s() { return 1e-9 * static_cast<double>(HostTimeline::now()); }

  // ---- server (ps_server.cpp) ----
  void serve();
  void snapshot(int64_t epoch);
  // Server 0: the progress hooks (live at most every 0.2 s; a line per snapshot epoch).
  void report_progress(bool epoch_done);
  // Server 0: whether to request a checkpoint now; *stop = it ends the run.
  bool checkpoint_wanted(bool* stop);
  // Serves until every worker has paused, then joins the checkpoint. True = stop.
  bool await_pause_and_checkpoint();

  // ---- worker (ps_worker.cpp) ----
  void work();
  // One training step at the worker's position (step s of the epoch).
  void train_step(ShardPlan& plan, int64_t epoch, int64_t s);
  // Counts a finished epoch (and its progress figures) on server 0.
  void count_epoch(int64_t epoch);
  // Until every worker is done, answers checkpoint requests.
  void wait_for_the_others(int64_t epoch);
  // A checkpoint was requested (and a local stop signal was reported to server 0).
  // request_pending() is the same without arming the watchdog (the caller does).
  bool checkpoint_requested();
  bool request_pending();
  // Push what is pending, count itself paused, join the checkpoint. True = stop.
  bool pause_for_checkpoint(int64_t epoch, int64_t step_in_epoch);
  void pull();
  void push();
  // The host buffers a worker checkpoints: its parameters.
  std::vector<NamedValues> worker_buffers();
  // What a server checkpoints: its shard, and per worker the rule's state it keeps for it
  // (slices of full-length vectors).
  std::vector<NamedValues> server_slices();

  // ---- both (async_trainer.cpp) ----
  // Collective: rank 0 writes the checkpoint from the shards and every worker's state.
  // Returns whether the run stops here (on every rank).
  bool checkpoint_collective(int64_t epoch, int64_t step_in_epoch);
  void restore(const Checkpoint& c);
  std::vector<EpochStats> evaluate_snapshots(const TrainHooks& hooks);

  const Config& cfg_;
  const DistributedConfig& dist_;
  const Comm& comm_;
  Model& model_;
  const std::vector<Range> decayed_;  // where L2 applies
  const Splits splits_;               // pointers to the caller's splits
  Watchdog& watchdog_;
  int workers_;
  ParamShards shards_;
  SoftmaxCrossEntropy loss_;
  std::vector<int32_t> labels_;
  Evaluator evaluator_;
  Profiler* prof_;
  StepNames names_;
  FiniteGuard guard_;
  LrSchedule schedule_;  // workers: over their own steps
  ModelSelector selector_;
  FinalModel final_;

  // worker state
  WorkerState pos_;  // position and per-epoch sums (what a checkpoint carries)
  int64_t pending_steps_ = 0;
  float lr_ = 0;                             // the learning rate of the current step
  Buffer pending_;                           // gradient sum since the last push, on the device
  HostMirror pending_host_, params_host_;    // what pushes read and pulls write
  std::vector<int64_t> prev_versions_;
  RmaStats rma_;
  double work_s_ = 0;
  int64_t epoch_staleness_ = 0, epoch_pushes_ = 0;  // this epoch's, for server 0's progress

  // checkpoints
  Checkpointer* ckpt_ = nullptr;
  int64_t handled_ = 0;  // checkpoint requests answered
  bool signal_reported_ = false;
  int stopped_by_ = 0;
  int64_t next_ckpt_version_ = 0;
  double last_ckpt_t_ = 0, t_before_ = 0;  // t_before_: training time before a resume
  double t0_ = 0;

  // server state: the update rule on this server's shard, with the CPU's operations
  std::unique_ptr<VectorOps> server_ops_;
  std::unique_ptr<UpdateRule> rule_;
  ParamShards::Apply apply_;  // rule_ as the shards call it
  // server 0: every worker's pushes when the first worker finished (the fairness figure)
  std::vector<int64_t> pushes_at_first_done_;
  // server 0 state
  const TrainHooks* hooks_ = nullptr;
  ServerProgress progress_;
  double last_progress_t_ = 0, epoch_start_t_ = 0;
  int64_t epoch_start_pushes_ = 0, epoch_start_steps_ = 0;
  std::vector<Snapshot> snapshots_;
  int64_t total_pushes_ = 0;
};

}  // namespace hpdl
