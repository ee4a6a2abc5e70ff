// A parameter-server rank (see async_trainer.hpp). Its loop applies every worker's push
// through the update rule and serves every pull (ParamShards::serve), in arrival order;
// server 0 also snapshots the parameters whenever the workers together finish an epoch,
// reports progress, keeps the fairness figure, decides when to checkpoint and drops a worker
// that has gone silent (watch_workers). Servers hold host memory only; the rule runs with
// the CPU's vector operations.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "hpdl/kernels/vector_ops.hpp"
#include "hpdl/train/ps_checkpoint.hpp"
#include "hpdl/train/ps_context.hpp"
#include "hpdl/train/trainer.hpp"
#include "hpdl/train/update_rules.hpp"

namespace hpdl {

class PsServer {
 public:
  struct Snapshot {
    int64_t epoch;
    double t;        // seconds since the start of training
    int64_t pushes;  // updates applied (shard 0's version)
    std::vector<float> params;
  };

  // worker_steps: worker 0's steps per epoch (for the progress figures).
  PsServer(PsContext& ctx, int64_t num_params, int64_t worker_steps);

  // Before serving: the position training starts from (a checkpoint's, or 0).
  void start(int64_t global_step, double elapsed_s);
  // Serves until every worker is done (true), or a checkpoint stopped the run (false).
  bool serve(const TrainHooks& hooks);

  // What this server checkpoints: its shard ("params"), and per worker the rule's state it
  // keeps for that worker ("worker<k>.w_bak", ...), as slices of full-length vectors.
  std::vector<NamedValues> slices() { return slices(ctx_.workers()); }
  // Server 0: its snapshots into a checkpoint, and the time it was written.
  void add_snapshots(Checkpoint& c) const;
  void checkpointed(double elapsed_s) { last_ckpt_t_ = elapsed_s; }
  // This server's part of a checkpoint (version, slices; server 0: counters, snapshots);
  // with r (the checkpoint is of another worker count), under that rule.
  void restore(const Checkpoint& c, const WorkerRedistribution* r = nullptr);

  // A worker the servers dropped: silent (no request, no epoch counted) for half the
  // watchdog's limit while not done.
  struct Left {
    int worker = 0;
    double t = 0;         // seconds since the start of training
    int64_t pushes = 0;   // its pushes applied (server 0's shard)
    double silent_s = 0;  // how long it had been silent
  };
  // Server 0: the workers dropped so far, in the order they left.
  const std::vector<Left>& left() const { return left_; }

  const std::vector<Snapshot>& snapshots() const { return snapshots_; }
  // Server 0: every worker's pushes applied when the first worker finished (worker order;
  // -1 for a worker dropped before).
  const std::vector<int64_t>& pushes_at_first_done() const { return pushes_at_first_done_; }

 private:
  // The slices with the per-worker state of workers 0..workers-1.
  std::vector<NamedValues> slices(int workers);
  // One turn of the loop; pauses poll_us when it found nothing to do.
  void turn();
  void snapshot(int64_t epoch);
  // Server 0: the progress hooks (live at most every 0.2 s; a line per snapshot epoch).
  void report_progress(bool epoch_done);
  // Server 0: whether to request a checkpoint now; *stop = it ends the run.
  bool checkpoint_wanted(bool* stop);
  // Serves until every worker has paused, then joins the checkpoint. True = stop.
  bool await_pause_and_checkpoint();
  // Server 0: drops the workers silent for too long while at least
  // distributed.min_workers would be left (otherwise the watchdog ends the run); the other
  // servers: follow server 0's drops.
  void watch_workers(bool in_pause);  // in_pause: a checkpoint's pause is under way
  int live_workers() const { return shards_.workers() - static_cast<int>(left_count_); }

  PsContext& ctx_;
  const DistributedConfig& dist_;
  ParamShards& shards_;
  const int64_t num_params_, worker_steps_;
  std::unique_ptr<VectorOps> ops_;  // the CPU's
  std::unique_ptr<UpdateRule> rule_;
  ParamShards::Apply apply_;  // rule_ as the shards call it
  int64_t handled_ = 0;       // checkpoint requests answered
  std::vector<int64_t> pushes_at_first_done_;
  // server 0
  const TrainHooks* hooks_ = nullptr;
  ServerProgress progress_;
  double last_progress_t_ = 0, epoch_start_t_ = 0, last_ckpt_t_ = 0;
  int64_t epoch_start_pushes_ = 0, epoch_start_steps_ = 0, next_ckpt_version_ = 0;
  std::vector<Snapshot> snapshots_;
  // Workers that leave: when each last showed activity, and what it was (server 0).
  std::vector<double> active_t_;
  std::vector<int64_t> activity_;
  std::vector<Left> left_;
  size_t left_count_ = 0;  // every server: workers dropped
  double next_watch_t_ = 0;
};

}  // namespace hpdl
