// A parameter-server worker (see ps_worker.hpp).
#include "hpdl/train/ps_worker.hpp"

#include <time.h>

#include <algorithm>
#include <cmath>

#include "hpdl/core/error.hpp"
#include "hpdl/core/stop_signal.hpp"

namespace hpdl {

PsWorker::PsWorker(PsContext& ctx, Model& model, const Splits& splits)
    : ctx_(ctx),
      dist_(ctx.cfg.distributed),
      model_(model),
      splits_(splits),
      shards_(ctx.shards),
      index_(ctx.comm.rank() - ctx.shards.servers()),
      servers_name_(ctx.shards.servers() == 1
                        ? "rank 0, the parameter server"
                        : "ranks 0 to " + std::to_string(ctx.shards.servers() - 1) +
                              ", the parameter servers"),
      on_servers_{servers_name_.c_str(), index_ == 0},
      plan_(splits.train->size(), ctx.cfg.train.batch, index_, ctx.workers()),
      local_(ctx.cfg, ctx.comm, model, *splits.train, ctx.watchdog, ctx.prof,
             plan_.steps_per_epoch()),
      pending_(model.num_params(), model.device()),
      pending_host_(model.device(), pending_.span()),
      params_host_(model.device(), model.params()),
      prev_versions_(ctx.shards.servers()) {
  HPDL_REQUIRE(model.batch() == ctx.cfg.train.batch, "model batch does not match train.batch");
  pos_.pulled_versions.assign(ctx.shards.servers(), 0);
  for (auto* v : {&pos_.epoch_loss, &pos_.epoch_samples, &pos_.epoch_steps})
    v->assign(ctx.cfg.train.epochs, 0.0);
}

bool PsWorker::work() {
  const int64_t epochs = ctx_.cfg.train.epochs, max_steps = ctx_.cfg.train.max_steps;
  const int64_t first_epoch = pos_.epoch, first_step = pos_.step_in_epoch;
  {
    // Server 0 tells a silent worker from a working one by its words (a resumed worker's
    // epochs before this run count too).
    WatchdogScope guard(ctx_.watchdog, "worker-epoch count", pos_.step);
    shards_.count_epochs_of_mine(first_epoch - 1);
  }
  bool stopped = false;
  int64_t epoch = first_epoch;
  for (; epoch <= epochs && !stopped; ++epoch) {
    plan_.begin_epoch(ctx_.cfg.train.seed, epoch);
    for (int64_t s = epoch == first_epoch ? first_step : 0; s < plan_.steps_per_epoch(); ++s) {
      if (max_steps > 0 && pos_.step >= max_steps) {
        stopped = true;
        break;
      }
      if (checkpoint_requested() && pause_for_checkpoint(epoch, s)) return false;
      train_step(plan_, epoch, s);
    }
    if (pos_.pending_steps > 0) push();  // an epoch ends with everything pushed
    if (!stopped) count_epoch(epoch);
  }
  {
    WatchdogScope guard(ctx_.watchdog, "worker done count", pos_.step);
    shards_.count_done_of_mine();
    for (int s = 0; s < shards_.servers(); ++s) shards_.add(s, ParamShards::kWorkersDone, 1);
  }
  work_s_ = ctx_.elapsed_s();
  return wait_for_the_others(stopped ? epoch - 1 : epoch);
}

void PsWorker::train_step(ShardPlan& plan, int64_t epoch, int64_t s) {
  Profiler* prof = ctx_.prof;
  const TrainConfig& train = ctx_.cfg.train;
  if (prof) prof->begin_step(pos_.step);
  if (must_pull_ || pos_.step % dist_.n_fetch == 0) pull();
  lr_ = static_cast<float>(local_.lr(pos_.step));
  const double loss =
      local_.gradients(plan.rows(s), pos_.step, 1.0f / static_cast<float>(train.batch));
  bool applied = false;
  {
    DeviceScope timed(prof, local_.names().update);
    // Nothing non-finite is applied locally or pushed to the servers.
    applied = local_.checked(LocalStep::Gradient::kLocal, loss, pos_.step, epoch);
    if (applied) {
      // Accumulate for the push, and keep learning locally until the next pull.
      model_.ops().axpy(model_.num_params(), 1.0f, model_.grads().data(), pending_.data());
      local_.update(pos_.step);
    }
  }
  if (applied) {
    pos_.epoch_loss[epoch - 1] += loss;
    pos_.epoch_samples[epoch - 1] += static_cast<double>(train.batch);
  }
  pos_.epoch_steps[epoch - 1] += 1;
  if (++pos_.pending_steps >= dist_.n_push) push();  // >=: a run resumed with a smaller n_push
  if (prof) prof->end_step();
  ++pos_.step;
}

void PsWorker::count_epoch(int64_t epoch) {
  WatchdogScope guard(ctx_.watchdog, "worker-epoch count", pos_.step);
  // Progress figures first: server 0 reads them once it sees the epoch counted.
  shards_.add(0, ParamShards::kWorkerSteps, static_cast<int64_t>(pos_.epoch_steps[epoch - 1]));
  shards_.add(0, ParamShards::kStalenessSum, epoch_staleness_);
  shards_.add(0, ParamShards::kStalenessPushes, epoch_pushes_);
  epoch_staleness_ = epoch_pushes_ = 0;
  shards_.count_epochs_of_mine(1);
  shards_.add(0, ParamShards::kWorkerEpochs, 1);
}

bool PsWorker::wait_for_the_others(int64_t epoch) {
  // Until every worker is done, checkpoints still need this worker (it has nothing left:
  // its position says so). Waiting for the slower workers is bounded like any wait. Each
  // look is an atomic that server 0 must serve, between the pushes and pulls of the workers
  // still training: the pause doubles up to kMaxPauseUs, or done workers polling every 50 us
  // starved a last worker's pull on a quarter-core server (4 hosts at 0.125 core, measured).
  constexpr double kMaxPauseUs = 20000;
  double pause_us = std::max(dist_.poll_us, 1.0);
  while (true) {
    bool finished = false, requested = false;
    {
      WatchdogScope guard(ctx_.watchdog, "waiting for the other workers", pos_.step);
      while (!(finished = shards_.read(0, ParamShards::kFinish) > 0) &&
             !(requested = ctx_.ckpt && request_pending())) {
        ctx_.watchdog.poll();
        const auto ns = static_cast<long>(pause_us * 1000);
        const timespec pause{ns / 1000000000, ns % 1000000000};
        nanosleep(&pause, nullptr);
        pause_us = std::min(2 * pause_us, std::max(kMaxPauseUs, dist_.poll_us));
      }
    }
    if (finished) return true;
    if (pause_for_checkpoint(epoch, 0)) return false;
  }
}

void PsWorker::pull() {
  WatchdogScope guard(ctx_.watchdog, "parameter pull", pos_.step, on_servers_);
  ProfileScope timed(ctx_.prof, local_.names().pull);
  shards_.pull(params_host_.host(), pos_.pulled_versions, rma_);
  params_host_.upload();
  pos_.pushes_since_pull = 0;
  must_pull_ = false;
}

void PsWorker::push() {
  WatchdogScope guard(ctx_.watchdog, "parameter push", pos_.step, on_servers_);
  ProfileScope timed(ctx_.prof, local_.names().push);
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
  pos_.pending_steps = 0;
}

bool PsWorker::checkpoint_requested() {
  if (!ctx_.ckpt) return false;
  WatchdogScope guard(ctx_.watchdog, "checkpoint request check", pos_.step, on_servers_);
  return request_pending();
}

bool PsWorker::request_pending() {
  if (ctx_.ckpt->config().on_signal && stop_signal() && !signal_reported_) {
    shards_.add(0, ParamShards::kSignals, 1);  // server 0 decides
    signal_reported_ = true;
  }
  return shards_.read(0, ParamShards::kRequest) > handled_;
}

bool PsWorker::pause_for_checkpoint(int64_t epoch, int64_t step_in_epoch) {
  ++handled_;  // what is pending stays pending: the checkpoint carries it
  {
    WatchdogScope guard(ctx_.watchdog, "checkpoint pause", pos_.step, on_servers_);
    // A dropped worker that came back must not count in the pause (its requests are answered
    // with "leave", but the pause is counted without one).
    if (shards_.dropped_me()) throw ParamShards::dropped_error();
    shards_.count_pause_of_mine();
    shards_.add(0, ParamShards::kPaused, 1);
    // Until every live worker has paused (server 0 may drop one that died first): sleeping
    // from 20 us, doubling to 1 ms, so that the waiting leaves the CPU to the others.
    static const IdlePolicy sleeping{true, 0.0, 1e-3};
    IdleWait idle(sleeping);
    while (shards_.read(0, ParamShards::kPauseComplete) < handled_) {
      ctx_.watchdog.poll();
      idle.pause();
    }
  }
  return ctx_.checkpoint(epoch, step_in_epoch);
}

void PsWorker::send_checkpoint(int64_t epoch, int64_t step_in_epoch) {
  pos_.epoch = epoch, pos_.step_in_epoch = step_in_epoch;
  params_host_.download();
  std::vector<NamedValues> buffers = {{"params", params_host_.host()}};
  if (pos_.pending_steps > 0) {
    pending_host_.download();
    buffers.push_back({"pending", pending_host_.host()});
  }
  send_worker(ctx_.comm, pos_, buffers);
}

void PsWorker::restore(const Checkpoint& c, const WorkerRedistribution* r) {
  if (r) {
    pos_ = redistributed_worker(c, *r, index_, splits_.train->size(), ctx_.cfg.train.batch,
                                ctx_.cfg.train.epochs);
    pos_.pulled_versions.assign(shards_.servers(), 0);
    must_pull_ = true;
    return;
  }
  pos_ = restore_worker(c, index_, {{"params", params_host_.host()}});
  params_host_.upload();
  if (pos_.pending_steps > 0) {
    restore_worker(c, index_, {{"pending", pending_host_.host()}});
    pending_host_.upload();
  }
  // A run resumed with another number of epochs: per-epoch sums for this run's epochs.
  for (auto* v : {&pos_.epoch_loss, &pos_.epoch_samples, &pos_.epoch_steps})
    v->resize(ctx_.cfg.train.epochs, 0.0);
}

WorkerReport PsWorker::report() const {
  const StalenessSummary stale = summarize_staleness(rma_.staleness);
  WorkerReport r;
  WorkerTotals& t = r.totals;
  t.rank = shards_.servers() + index_;  // the job's rank (the run's Comm may have left some out)
  t.steps = pos_.step, t.pulls = rma_.pulls, t.pushes = rma_.pushes;
  t.pull_s = rma_.pull_s, t.push_s = rma_.push_s;
  t.server_wait_s = rma_.server_wait_s, t.max_push_s = rma_.max_push_s;
  t.work_s = work_s_;
  t.rma_fraction = work_s_ > 0 ? (rma_.pull_s + rma_.push_s) / work_s_ : 0.0;
  t.staleness_mean = stale.mean, t.staleness_p95 = stale.p95;
  t.nonfinite_skipped = local_.guard().skipped();
  r.staleness_histogram = rma_.staleness;
  return r;
}

}  // namespace hpdl
