// Synchronous data-parallel training: every rank computes gradients on its slice of the
// global batch; MPI_Iallreduce sums them in place on the flat gradient buffer, in buckets
// that start during backward (GradientReducer); the loss is already scaled by 1/global
// batch, so the sum is the mean; then every rank applies the same update. N ranks on B/N
// samples each therefore follow 1 rank on B samples. Low-communication variants
// (distributed.*): the buckets travel in 16 bits with error feedback (compression), or local
// SGD / DiLoCo (sync_every > 1: ParamAverager), where each rank steps alone between averages.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/sampler.hpp"
#include "hpdl/dist/grad_reducer.hpp"
#include "hpdl/dist/param_averager.hpp"
#include "hpdl/nn/model.hpp"
#include "hpdl/train/checkpointer.hpp"
#include "hpdl/train/epoch_stats.hpp"
#include "hpdl/train/local_step.hpp"
#include "hpdl/train/model_keeper.hpp"
#include "hpdl/train/passes.hpp"
#include "hpdl/train/rank_state.hpp"
#include "hpdl/train/trainer_config.hpp"
#include "hpdl/train/training.hpp"

namespace hpdl {

// Parameter-server training as server 0 sees it while the workers train.
struct ServerProgress {
  int64_t epoch = 0;                         // the epoch in progress (the slowest worker's)
  int64_t pushes = 0, pushes_per_epoch = 0;  // this epoch's so far / expected
  int64_t total_pushes = 0;
  double samples_per_s = 0;   // lines: the epoch's worker steps x batch / its time; live:
                              // pushes x n_push x batch / time (exact but at epoch ends)
  double staleness_mean = 0;  // over the pushes of the workers' finished epochs
  double epoch_s = 0, elapsed_s = 0;
};

// Rank-0 hooks for progress output; called on every rank, cheap when empty.
struct TrainHooks {
  std::function<void(int64_t epoch, int64_t step, int64_t steps, double mean_loss,
                     double samples_per_s)>
      on_step;
  std::function<void(const EpochStats&)> on_epoch;
  std::function<void(const std::string&)> on_warning;  // e.g. a skipped non-finite step
  // Parameter-server modes, on server 0 while the workers train (the evaluations of the
  // epochs' snapshots, on_epoch, follow after training).
  std::function<void(const ServerProgress&)> on_server_progress, on_server_epoch;
};

class SyncTrainer final : public Trainer {
 public:
  // The splits held by `splits` may be null (no test / no validation). The model's batch
  // must equal the plan's local batch. prof may be null (profiling off); otherwise the
  // trainer times the model's layers too.
  SyncTrainer(const TrainerConfig& cfg, const Comm& comm, Model& model, const Splits& splits,
              Watchdog& watchdog, Profiler* prof = nullptr);

  // Trains cfg.train.epochs epochs (or until cfg.train.max_steps, or train.patience),
  // evaluating the validation split (else the test split) after each, and leaves the model
  // chosen by train.keep in the model (final_model() says which, with its test result);
  // with `from`, continues where that checkpoint stopped. ckpt (may be null) decides when
  // to write checkpoints; after a stop signal run() returns early (stopped_by() != 0).
  std::vector<EpochStats> run(const TrainHooks& hooks, Checkpointer* ckpt = nullptr,
                              const Checkpoint* from = nullptr) override;
  // One training step on global step `step` with this rank's rows; returns the local loss
  // sum, or nothing when the step was skipped (a non-finite gradient under
  // train.nonfinite = "skip"; policy "stop" throws AgreedError instead).
  // next_rows: the next step's rows, read ahead into the cache (empty: none).
  std::optional<double> step(std::span<const int64_t> rows, std::span<const int64_t> next_rows,
                             int64_t global_step, int64_t epoch);
  // The local SGD averager (its settings and state; off unless distributed.sync_every > 1).
  const ParamAverager& averager() const { return averager_; }
  int64_t skipped_steps() const { return local_.guard().skipped(); }

  // Collective: the checkpoint of this point of training (position, loss so far summed
  // over ranks, and on rank 0 the parameters and optimizer state).
  Checkpoint state(int64_t epoch, int64_t epoch_step, double loss_sum, double epoch_s,
                   double elapsed_s, const std::vector<EpochStats>& history);
  // Parameters, optimizer state and global step from a checkpoint (on every rank).
  void restore(const Checkpoint& c);

  const ConfusionMatrix& last_confusion() const override { return keeper_.confusion(); }
  const FinalModel& final_model() const override { return keeper_.final_model(); }
  int64_t global_step() const { return global_step_; }
  int64_t steps() const override { return global_step_; }
  int stopped_by() const override { return stopped_by_; }

 private:
  // Step s with distributed.virtual_shards: this rank's shards one after another, their
  // gradients summed with every rank's in shard order (Comm::ordered_sum).
  std::optional<double> shard_step(int64_t s, int64_t global_step, int64_t epoch);
  // The state that differs between ranks (rank_state.hpp), and its restore.
  RankState own_state();
  void restore_own_state(const Checkpoint& c);

  const TrainerConfig cfg_;
  const Comm& comm_;
  Model& model_;
  Watchdog& watchdog_;
  BatchPlan plan_;
  Profiler* prof_;
  LocalStep local_;  // the step's own part: passes, guard, optimizer, schedule
  GradientReducer reducer_;
  ParamAverager averager_;
  ModelKeeper keeper_;  // epochs judged, the run's model kept
  int64_t global_step_ = 0;
  int stopped_by_ = 0;
  std::vector<float> shard_grads_;  // virtual shards: this rank's shards' gradients
};

}  // namespace hpdl
