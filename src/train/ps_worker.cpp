// A parameter-server worker (see async_trainer.hpp): trains on its slice of every epoch,
// pulls every n_fetch steps, pushes every n_push steps through its update rule, and pauses
// for checkpoints when server 0 asks. Parameters and the pending gradient stay on the
// device; pulls and pushes go through their host mirrors.
#include <time.h>

#include <algorithm>
#include <cmath>

#include "hpdl/core/stop_signal.hpp"
#include "hpdl/optim/optimizer.hpp"
#include "hpdl/train/async_trainer.hpp"

namespace hpdl {

void AsyncTrainer::work() {
  const int worker = comm_.rank() - shards_.servers();
  ShardPlan plan(splits_.train->size(), cfg_.train.batch, worker, workers_);
  const int64_t first_epoch = pos_.epoch, first_step = pos_.step_in_epoch;
  bool stopped = false;
  int64_t epoch = first_epoch;
  for (; epoch <= cfg_.train.epochs && !stopped; ++epoch) {
    plan.begin_epoch(cfg_.train.seed, epoch);
    for (int64_t s = epoch == first_epoch ? first_step : 0; s < plan.steps_per_epoch(); ++s) {
      if (cfg_.train.max_steps > 0 && pos_.step >= cfg_.train.max_steps) {
        stopped = true;
        break;
      }
      if (checkpoint_requested() && pause_for_checkpoint(epoch, s)) return;
      train_step(plan, epoch, s);
    }
    if (pending_steps_ > 0) push();  // an epoch ends with everything pushed
    if (!stopped) count_epoch(epoch);
  }
  {
    WatchdogScope guard(watchdog_, "worker done count", pos_.step);
    for (int s = 0; s < shards_.servers(); ++s) shards_.add(s, ParamShards::kWorkersDone, 1);
  }
  work_s_ = wall_s() - t0_;
  wait_for_the_others(stopped ? epoch - 1 : epoch);
}

void AsyncTrainer::train_step(ShardPlan& plan, int64_t epoch, int64_t s) {
  if (prof_) prof_->begin_step(pos_.step);
  if (pos_.step % dist_.n_fetch == 0) pull();
  lr_ = static_cast<float>(schedule_.at(pos_.step));
  const auto rows = plan.rows(s);
  const Pass pass{true, cfg_.train.seed, pos_.step, rows.data()};
  const double loss =
      compute_gradients(model_, loss_, *splits_.train, rows, labels_.data(), pass,
                        1.0f / static_cast<float>(cfg_.train.batch), {}, prof_, &names_);
  bool applied = false;
  {
    ProfileScope timed(prof_, names_.update);
    VectorOps& ops = model_.ops();
    add_l2(ops, decayed_, model_.params(), model_.grads(), static_cast<float>(cfg_.optimizer.l2));
    // Nothing non-finite is applied locally or pushed to the servers.
    const double grad_sq = sum_of_squares(ops, model_.grads());
    applied = guard_.check_local(grad_sq, model_, pos_.step, epoch);
    if (applied) {
      clip_to_norm(ops, model_.grads(), std::sqrt(grad_sq), cfg_.optimizer.clip_norm);
      // Accumulate for the push, and keep learning locally until the next pull.
      const int64_t n = model_.num_params();
      ops.axpy(n, 1.0f, model_.grads().data(), pending_.data());
      ops.sgd(n, lr_, 0.0f, model_.grads().data(), nullptr, model_.params().data());
    }
  }
  if (applied) {
    pos_.epoch_loss[epoch - 1] += loss;
    pos_.epoch_samples[epoch - 1] += static_cast<double>(cfg_.train.batch);
  }
  pos_.epoch_steps[epoch - 1] += 1;
  if (++pending_steps_ == dist_.n_push) push();
  if (prof_) prof_->end_step();
  ++pos_.step;
}

void AsyncTrainer::count_epoch(int64_t epoch) {
  WatchdogScope guard(watchdog_, "worker-epoch count", pos_.step);
  // Progress figures first: server 0 reads them once it sees the epoch counted.
  shards_.add(0, ParamShards::kWorkerSteps, static_cast<int64_t>(pos_.epoch_steps[epoch - 1]));
  shards_.add(0, ParamShards::kStalenessSum, epoch_staleness_);
  shards_.add(0, ParamShards::kStalenessPushes, epoch_pushes_);
  epoch_staleness_ = epoch_pushes_ = 0;
  shards_.add(0, ParamShards::kWorkerEpochs, 1);
}

void AsyncTrainer::wait_for_the_others(int64_t epoch) {
  // Until every worker is done, checkpoints still need this worker (it has nothing left:
  // its position says so). Waiting for the slower workers is bounded like any wait.
  const timespec pause{0, static_cast<long>(std::max(dist_.poll_us, 1.0) * 1000)};
  while (true) {
    bool finished = false, requested = false;
    {
      WatchdogScope guard(watchdog_, "waiting for the other workers", pos_.step);
      while (!(finished = shards_.read(0, ParamShards::kFinish) > 0) &&
             !(requested = ckpt_ && request_pending())) {
        watchdog_.poll();
        nanosleep(&pause, nullptr);
      }
    }
    if (finished || pause_for_checkpoint(epoch, 0)) return;
  }
}

void AsyncTrainer::pull() {
  WatchdogScope guard(watchdog_, "parameter pull", pos_.step);
  ProfileScope timed(prof_, names_.pull);
  shards_.pull(params_host_.host(), pos_.pulled_versions, rma_);
  params_host_.upload();
  pos_.pushes_since_pull = 0;
}

void AsyncTrainer::push() {
  WatchdogScope guard(watchdog_, "parameter push", pos_.step);
  ProfileScope timed(prof_, names_.push);
  pending_host_.download();
  // The servers apply the rule at lr_, the last step's rate.
  shards_.push(pending_host_.host(), lr_, prev_versions_, rma_);
  // Staleness: updates by others between this worker's pull and this push, on the
  // stalest shard.
  int64_t tau = 0;
  for (size_t s = 0; s < prev_versions_.size(); ++s)
    tau = std::max(tau, prev_versions_[s] - pos_.pulled_versions[s] - pos_.pushes_since_pull);
  rma_.record_staleness(tau);
  epoch_staleness_ += std::max<int64_t>(tau, 0), ++epoch_pushes_;
  ++pos_.pushes_since_pull;
  pending_.zero();
  pending_steps_ = 0;
}

bool AsyncTrainer::checkpoint_requested() {
  if (!ckpt_) return false;
  WatchdogScope guard(watchdog_, "checkpoint request check", pos_.step);
  return request_pending();
}

bool AsyncTrainer::request_pending() {
  if (ckpt_->config().on_signal && stop_signal() && !signal_reported_) {
    shards_.add(0, ParamShards::kSignals, 1);  // server 0 decides
    signal_reported_ = true;
  }
  return shards_.read(0, ParamShards::kRequest) > handled_;
}

bool AsyncTrainer::pause_for_checkpoint(int64_t epoch, int64_t step_in_epoch) {
  ++handled_;
  if (pending_steps_ > 0) push();
  {
    WatchdogScope guard(watchdog_, "checkpoint pause", pos_.step);
    shards_.add(0, ParamShards::kPaused, 1);
  }
  return checkpoint_collective(epoch, step_in_epoch);
}

std::vector<NamedValues> AsyncTrainer::worker_buffers() {
  return {{"params", params_host_.host()}};
}

}  // namespace hpdl
