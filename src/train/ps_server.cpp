// The parameter server's ranks (see async_trainer.hpp): poll MPI progress for the workers'
// one-sided operations, and on server 0 snapshot the parameters per epoch, report progress
// and decide when to checkpoint. Servers hold host memory only.
#include <time.h>

#include <algorithm>

#include "hpdl/core/stop_signal.hpp"
#include "hpdl/train/async_trainer.hpp"

namespace hpdl {

void AsyncTrainer::serve() {
  const int me = comm_.rank();
  const timespec pause{0, static_cast<long>(dist_.poll_us * 1000)};
  // One turn: every deposited push applied, every requested pull served; a server pauses
  // only when a turn found nothing to do.
  const auto turn = [&] {
    if (shards_.serve(apply_) == 0 && pause.tv_nsec > 0) nanosleep(&pause, nullptr);
  };
  // The next epoch to snapshot (server 0).
  int64_t next = snapshots_.empty() ? 1 : snapshots_.back().epoch + 1;
  // Waiting for the workers is bounded too: the watchdog restarts whenever a push reaches
  // this shard or a worker counts itself done, so it fires only when no worker has made
  // progress for run.watchdog_s (a stopped or lost worker).
  int64_t seen = -1;
  while (true) {
    turn();
    const int64_t done_count = shards_.read(me, ParamShards::kWorkersDone);
    const int64_t progress = shards_.own_version() + done_count;
    if (progress != seen) {
      seen = progress;
      watchdog_.arm("waiting for any worker's push", progress);
    }
    if (me == 0) {
      if (done_count > 0 && pushes_at_first_done_.empty()) {
        for (int k = 0; k < workers_; ++k) pushes_at_first_done_.push_back(shards_.applied(k));
      }
      // Workers count an epoch before they count themselves done, so reading "done" first
      // means every epoch of a finished job has been counted by the next read.
      const bool done = done_count == workers_;
      const int64_t worker_epochs = shards_.read(0, ParamShards::kWorkerEpochs);
      for (; next <= cfg_.train.epochs && worker_epochs >= next * workers_; ++next) {
        snapshot(next);
        progress_.epoch = next;
        report_progress(true);
      }
      progress_.epoch = std::min(next, cfg_.train.epochs);
      report_progress(false);
      if (done) {
        // The final parameters (while the other servers still serve), unless the last
        // epoch's snapshot already holds them; then no checkpoint, and every server leaves.
        snapshot(std::min(next, cfg_.train.epochs));
        const size_t n = snapshots_.size();
        if (n >= 2 && snapshots_[n - 1].pushes == snapshots_[n - 2].pushes) snapshots_.pop_back();
        shards_.add(0, ParamShards::kFinish, 1);
        break;
      }
      bool stop = false;
      if (checkpoint_wanted(&stop)) {
        if (stop) shards_.add(0, ParamShards::kStop, 1);
        shards_.add(0, ParamShards::kRequest, 1);
        ++handled_;
        if (await_pause_and_checkpoint()) return;
        seen = -1;  // the checkpoint's own bounds disarmed the watchdog
      }
    } else {
      if (shards_.read(0, ParamShards::kFinish) > 0) break;
      if (shards_.read(0, ParamShards::kRequest) > handled_) {
        ++handled_;
        if (await_pause_and_checkpoint()) return;
        seen = -1;
      }
    }
    watchdog_.poll();
  }
  watchdog_.disarm();
}

bool AsyncTrainer::await_pause_and_checkpoint() {
  const timespec pause{0, static_cast<long>(dist_.poll_us * 1000)};
  {
    // Every worker pauses within one step of its own, once its last push is applied: the
    // servers serve until all have.
    WatchdogScope guard(watchdog_, "waiting for the workers to pause", handled_);
    while (shards_.read(0, ParamShards::kPaused) < workers_) {
      if (shards_.serve(apply_) == 0 && pause.tv_nsec > 0) nanosleep(&pause, nullptr);
      watchdog_.poll();
    }
  }
  return checkpoint_collective(0, 0);
}

void AsyncTrainer::snapshot(int64_t epoch) {
  Snapshot s{epoch, 0, 0, std::vector<float>(model_.num_params())};
  RmaStats unused;
  std::vector<int64_t> versions(shards_.servers());
  shards_.pull(s.params, versions, unused);
  s.t = wall_s() - t0_;
  s.pushes = versions[0];  // every push updates every shard
  snapshots_.push_back(std::move(s));
}

void AsyncTrainer::report_progress(bool epoch_done) {
  if (!hooks_->on_server_progress && !hooks_->on_server_epoch) return;
  const double t = wall_s() - t0_;
  if (!epoch_done && t - last_progress_t_ < 0.2) return;
  last_progress_t_ = t;
  ServerProgress& p = progress_;
  p.total_pushes = shards_.read(0, ParamShards::kVersion);
  p.pushes = p.total_pushes - epoch_start_pushes_;
  const int64_t per_worker = (schedule_.steps_per_epoch() + dist_.n_push - 1) / dist_.n_push;
  p.pushes_per_epoch = per_worker * workers_;
  p.epoch_s = t - epoch_start_t_, p.elapsed_s = t;
  const double batch = static_cast<double>(cfg_.train.batch);
  const int64_t stale_pushes = shards_.read(0, ParamShards::kStalenessPushes);
  if (stale_pushes > 0)
    p.staleness_mean = double(shards_.read(0, ParamShards::kStalenessSum)) / stale_pushes;
  if (!epoch_done) {
    p.samples_per_s = p.epoch_s > 0 ? p.pushes * dist_.n_push * batch / p.epoch_s : 0;
    if (hooks_->on_server_progress) hooks_->on_server_progress(p);
    return;
  }
  const int64_t steps = shards_.read(0, ParamShards::kWorkerSteps);
  p.samples_per_s = p.epoch_s > 0 ? (steps - epoch_start_steps_) * batch / p.epoch_s : 0;
  if (hooks_->on_server_epoch) hooks_->on_server_epoch(p);
  epoch_start_t_ = t, epoch_start_pushes_ = p.total_pushes, epoch_start_steps_ = steps;
}

bool AsyncTrainer::checkpoint_wanted(bool* stop) {
  if (!ckpt_) return false;
  const CheckpointConfig& c = ckpt_->config();
  *stop = c.on_signal && (stop_signal() || shards_.read(0, ParamShards::kSignals) > 0);
  if (*stop) return true;
  const double t = wall_s() - t0_;
  if (c.every_s > 0 && t - last_ckpt_t_ >= c.every_s) {
    last_ckpt_t_ = t;
    return true;
  }
  if (c.every_steps > 0 && shards_.read(0, ParamShards::kVersion) >= next_ckpt_version_) {
    next_ckpt_version_ += c.every_steps;
    return true;
  }
  return false;
}

}  // namespace hpdl
