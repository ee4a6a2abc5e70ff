// The parameter server's ranks (see ps_server.hpp).
#include "hpdl/train/ps_server.hpp"

#include <time.h>

#include <algorithm>

#include "hpdl/core/error.hpp"
#include "hpdl/core/stop_signal.hpp"

namespace hpdl {

PsServer::PsServer(PsContext& ctx, int64_t num_params, int64_t worker_steps)
    : ctx_(ctx),
      dist_(ctx.cfg.distributed),
      shards_(ctx.shards),
      num_params_(num_params),
      worker_steps_(worker_steps),
      ops_(make_cpu_vector_ops()),
      rule_(make_update_rule(dist_, ctx.workers(), shards_.shard_size(ctx.comm.rank()), *ops_)) {
  apply_ = [this](int worker, const float* g, float lr, float* w, const float* bak, int64_t n) {
    rule_->apply(worker, g, lr, w, bak, n, shards_.read(ctx_.comm.rank(), ParamShards::kVersion));
  };
}

void PsServer::start(int64_t global_step, double elapsed_s) {
  const Checkpointer* ckpt = ctx_.ckpt;
  if (ckpt && ckpt->config().every_steps > 0)
    next_ckpt_version_ = global_step + ckpt->config().every_steps;
  last_ckpt_t_ = epoch_start_t_ = elapsed_s;
}

void PsServer::watch_workers(bool in_pause) {
  const double t = ctx_.elapsed_s();
  if (t < next_watch_t_) return;
  if (ctx_.comm.rank() != 0) {
    // Server 0 decides; the others look four times a second and stop serving the dropped.
    next_watch_t_ = t + 0.25;
    if (shards_.read(0, ParamShards::kGone) <= static_cast<int64_t>(left_count_)) return;
    const std::vector<int> gone = shards_.gone_workers();
    for (int k : gone) shards_.drop(k);
    left_count_ = gone.size();
    return;
  }
  next_watch_t_ = t + 0.1;
  const int workers = shards_.workers();
  if (active_t_.empty()) active_t_.assign(workers, t), activity_.assign(workers, -1);
  // Half the watchdog's limit: a worker that waits for the others (a done worker, one in a
  // checkpoint) waits up to the whole limit, so it is never ended before the silent one is
  // dropped.
  const double bound = ctx_.watchdog.limit_s() / 2;
  for (int k = 0; k < workers; ++k) {
    const ParamShards::WorkerWords w = shards_.worker_words(k);
    // A paused worker waits, silent, for the others.
    if (w.gone || w.done || (in_pause && w.pauses >= handled_)) continue;
    const int64_t activity = w.requests + w.epochs + w.pauses;
    if (activity != activity_[k]) {
      activity_[k] = activity, active_t_[k] = t;
      continue;
    }
    // Too few would be left: the watchdog ends the run, naming the silent rank.
    if (bound <= 0 || t - active_t_[k] < bound || live_workers() - 1 < dist_.min_workers) continue;
    shards_.drop(k);
    // Its counted epochs leave the sum that decides the snapshots (over the live workers).
    shards_.add(0, ParamShards::kWorkerEpochs, -w.epochs);
    left_.push_back({k, t, shards_.applied(k), t - active_t_[k]});
    ++left_count_;
    const std::string line =
        "worker " + std::to_string(k) + " (rank " + std::to_string(shards_.servers() + k) +
        ") dropped: silent for " + std::to_string(static_cast<int>(t - active_t_[k])) +
        " s (half of run.watchdog_s) after " + std::to_string(shards_.applied(k)) +
        " pushes; training goes on with " + std::to_string(live_workers()) + " of " +
        std::to_string(workers) + " workers";
    if (hooks_ && hooks_->on_warning) hooks_->on_warning(line);
  }
}

void PsServer::turn() {
  const timespec pause{0, static_cast<long>(dist_.poll_us * 1000)};
  if (shards_.serve(apply_) == 0 && pause.tv_nsec > 0) nanosleep(&pause, nullptr);
}

bool PsServer::serve(const TrainHooks& hooks) {
  hooks_ = &hooks;
  const int me = ctx_.comm.rank(), workers = shards_.workers();
  const int64_t epochs = ctx_.cfg.train.epochs;
  Watchdog& watchdog = ctx_.watchdog;
  // The next epoch to snapshot (server 0).
  int64_t next = snapshots_.empty() ? 1 : snapshots_.back().epoch + 1;
  // Waiting for the workers is bounded too: the watchdog restarts whenever a push reaches
  // this shard or a worker counts itself done, so it fires only when no worker has made
  // progress for run.watchdog_s (a stopped or lost worker).
  int64_t seen = -1;
  while (true) {
    turn();
    watch_workers(false);
    const int64_t done_count = shards_.read(me, ParamShards::kWorkersDone);
    const int64_t progress = shards_.own_version() + done_count;
    if (progress != seen) {
      seen = progress;
      watchdog.arm("waiting for any worker's push", progress);
    }
    if (me == 0) {
      if (done_count > 0 && pushes_at_first_done_.empty())
        for (int k = 0; k < workers; ++k)  // -1: dropped before
          pushes_at_first_done_.push_back(shards_.worker_words(k).gone ? -1 : shards_.applied(k));
      // Workers count an epoch before they count themselves done, so reading "done" first
      // means every epoch of a finished job has been counted by the next read.
      const int live = live_workers();
      const bool done = done_count >= live;
      const int64_t worker_epochs = shards_.read(0, ParamShards::kWorkerEpochs);
      for (; next <= epochs && worker_epochs >= next * live; ++next) {
        snapshot(next);
        progress_.epoch = next;
        report_progress(true);
      }
      progress_.epoch = std::min(next, epochs);
      report_progress(false);
      if (done) {
        // The final parameters (while the other servers still serve), unless the last
        // epoch's snapshot already holds them; then no checkpoint, and every server leaves.
        snapshot(std::min(next, epochs));
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
        if (await_pause_and_checkpoint()) return false;
        seen = -1;  // the checkpoint's own bounds disarmed the watchdog
      }
    } else {
      if (shards_.read(0, ParamShards::kFinish) > 0) break;
      if (shards_.read(0, ParamShards::kRequest) > handled_) {
        ++handled_;
        if (await_pause_and_checkpoint()) return false;
        seen = -1;
      }
    }
    watchdog.poll();
  }
  watchdog.disarm();
  return true;
}

bool PsServer::await_pause_and_checkpoint() {
  {
    // Every worker pauses within one step of its own, once its last push is applied: the
    // servers serve until all have.
    // A worker that dies before it pauses is dropped here too; server 0 then says the pause
    // is complete, and only then does every rank settle who takes part (the workers and the
    // other servers wait for that).
    WatchdogScope guard(ctx_.watchdog, "waiting for the workers to pause", handled_);
    if (ctx_.comm.rank() == 0) {
      while (shards_.read(0, ParamShards::kPaused) < live_workers()) {
        turn();
        watch_workers(true);
        ctx_.watchdog.poll();
      }
      shards_.add(0, ParamShards::kPauseComplete, 1);
    } else {
      while (shards_.read(0, ParamShards::kPauseComplete) < handled_) {
        turn();
        ctx_.watchdog.poll();
      }
    }
  }
  return ctx_.checkpoint(0, 0);
}

void PsServer::snapshot(int64_t epoch) {
  Snapshot s{epoch, 0, 0, std::vector<float>(num_params_)};
  RmaStats unused;
  std::vector<int64_t> versions(shards_.servers());
  shards_.pull(s.params, versions, unused);
  s.t = ctx_.elapsed_s();
  s.pushes = versions[0];  // every push updates every shard
  snapshots_.push_back(std::move(s));
}

void PsServer::report_progress(bool epoch_done) {
  if (!hooks_->on_server_progress && !hooks_->on_server_epoch) return;
  const double t = ctx_.elapsed_s();
  if (!epoch_done && t - last_progress_t_ < 0.2) return;
  last_progress_t_ = t;
  ServerProgress& p = progress_;
  p.total_pushes = shards_.read(0, ParamShards::kVersion);
  p.pushes = p.total_pushes - epoch_start_pushes_;
  const int64_t per_worker = (worker_steps_ + dist_.n_push - 1) / dist_.n_push;
  p.pushes_per_epoch = per_worker * live_workers();
  p.epoch_s = t - epoch_start_t_, p.elapsed_s = t;
  const double batch = static_cast<double>(ctx_.cfg.train.batch);
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

bool PsServer::checkpoint_wanted(bool* stop) {
  if (!ctx_.ckpt) return false;
  const CheckpointConfig& c = ctx_.ckpt->config();
  *stop = c.on_signal && (stop_signal() || shards_.read(0, ParamShards::kSignals) > 0);
  if (*stop) return true;
  const double t = ctx_.elapsed_s();
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

std::vector<NamedValues> PsServer::slices(int workers) {
  std::vector<NamedValues> out = {{"params", shards_.own_shard()}};
  for (const UpdateRule::State& st : rule_->shared_state())
    out.push_back({"outer." + st.name, st.values});
  for (int k = 0; k < workers; ++k) {
    if (rule_->uses_backup()) out.push_back({worker_key(k) + ".w_bak", shards_.pulled_copy(k)});
    for (const UpdateRule::State& st : rule_->state(k))
      out.push_back({worker_key(k) + "." + st.name, st.values});
  }
  return out;
}

void PsServer::add_snapshots(Checkpoint& c) const {
  std::vector<int64_t> meta;
  for (size_t k = 0; k < snapshots_.size(); ++k) {
    const Snapshot& sn = snapshots_[k];
    meta.insert(meta.end(), {sn.epoch, sn.pushes, static_cast<int64_t>(sn.t * 1e6)});
    c.buffers.push_back({"ps.snapshot" + std::to_string(k), sn.params});
  }
  c.counters.push_back({"ps.snapshots", meta});
}

void PsServer::restore(const Checkpoint& c, const WorkerRedistribution* r) {
  const int me = ctx_.comm.rank(), workers = ctx_.workers();
  shards_.set_own(ParamShards::kVersion, c.counter("ps.versions")->at(me));
  restore_shard(c, shards_.shard_begin(me),
                slices(r ? std::min(r->from_workers, workers) : workers));
  // Workers new to the run: the rule's initial state, and what they hold (every worker
  // pulls before its first step after a redistribution).
  for (int k = r ? r->from_workers : workers; k < workers; ++k) {
    if (rule_->uses_backup())
      std::copy_n(shards_.own_shard().begin(), shards_.own_shard().size(),
                  shards_.pulled_copy(k).begin());
    for (const UpdateRule::State& st : rule_->state(k))
      std::fill(st.values.begin(), st.values.end(), 0.0f);
  }
  if (me != 0) return;
  // Every worker starts in epoch r->epoch: the epochs before it count as done by all.
  shards_.set_own(ParamShards::kWorkerEpochs,
                  r ? (r->epoch - 1) * workers : c.counter("ps.worker_epochs")->front());
  const std::vector<int64_t>* meta = c.counter("ps.snapshots");
  for (size_t k = 0; meta && 3 * k + 2 < meta->size(); ++k) {
    if (r && (*meta)[3 * k] >= r->epoch) break;  // taken again
    const std::vector<float>* p = c.buffer("ps.snapshot" + std::to_string(k));
    if (!p) throw AgreedError("checkpoint lacks snapshot " + std::to_string(k));
    snapshots_.push_back(
        {(*meta)[3 * k], double((*meta)[3 * k + 2]) / 1e6, (*meta)[3 * k + 1], *p});
  }
}

}  // namespace hpdl
