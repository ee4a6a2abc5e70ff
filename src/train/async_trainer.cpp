// The parameter-server trainer: the server loop, the worker loop with its pull and push,
// and the evaluation of server 0's snapshots once everyone is done. Compiled without
// floating-point contraction so that the server's w + (-lr*g) is bit-identical to a
// local w - lr*g (the equivalence tests rely on it).
#include "hpdl/train/async_trainer.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>

#include "hpdl/core/error.hpp"
#include "hpdl/core/stop_signal.hpp"
#include "hpdl/optim/optimizer.hpp"

namespace hpdl {
namespace {
// Seconds on a steady clock (differences only).
double wall_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

AsyncTrainer::AsyncTrainer(const Config& cfg, const Comm& comm, Model& model,
                           const Splits& splits, Watchdog& watchdog, Profiler* prof)
    : cfg_(cfg),
      dist_(cfg.distributed),
      comm_(comm),
      model_(model),
      decayed_(model.decayed_ranges()),
      splits_(splits),
      watchdog_(watchdog),
      workers_(comm.size() - static_cast<int>(cfg.distributed.servers)),
      shards_(comm, static_cast<int>(cfg.distributed.servers), model.params()),
      loss_(model.kernels(), model.batch(), cfg.model.classes),
      labels_(model.batch()),
      evaluator_(comm, model, cfg.model.classes, watchdog),
      prof_(prof),
      names_(prof),
      guard_(cfg.train.nonfinite == "skip", comm, watchdog),
      // Every worker's steps per epoch are worker 0's or one fewer; rank 0 (a server) reports
      // worker 0's rate per epoch.
      schedule_(cfg.optimizer, cfg.train,
                ShardPlan(splits.train->size(), cfg.train.batch,
                          std::max(0, comm.rank() - static_cast<int>(cfg.distributed.servers)),
                          comm.size() - static_cast<int>(cfg.distributed.servers))
                    .steps_per_epoch()),
      selector_(cfg.train, model.num_params()),
      pulled_versions_(cfg.distributed.servers),
      prev_versions_(cfg.distributed.servers),
      epoch_loss_(cfg.train.epochs),
      epoch_samples_(cfg.train.epochs),
      epoch_steps_(cfg.train.epochs) {
  HPDL_REQUIRE(model.batch() == cfg.train.batch, "model batch does not match train.batch");
  model.set_profiler(prof);
  shards_.set_profiler(prof);
  if (!shards_.is_server()) {
    const int64_t n = model.num_params();
    pending_ = Buffer(n);
    if (dist_.mode == "dcasgd") {
      w_bak_ = Buffer(n);
      if (dist_.dc_adaptive) mean_square_ = Buffer(n);
    } else {
      update_ = Buffer(n);
    }
  }
}

AsyncTrainer::~AsyncTrainer() = default;

std::vector<EpochStats> AsyncTrainer::run(const TrainHooks& hooks, Checkpointer* ckpt,
                                          const Checkpoint* from) {
  // Nothing can ask for a checkpoint: the workers skip the per-step request check.
  const bool any = ckpt && (ckpt->config().on_signal || ckpt->config().every_steps > 0 ||
                            ckpt->config().every_s > 0);
  ckpt_ = any ? ckpt : nullptr;
  if (from) restore(*from);
  if (ckpt_ && ckpt_->config().every_steps > 0)
    next_ckpt_version_ = (from ? from->global_step : 0) + ckpt_->config().every_steps;
  {
    WatchdogScope guard(watchdog_, "parameter-server start", 0);
    comm_.barrier();
  }
  t0_ = wall_s() - t_before_;
  last_ckpt_t_ = t_before_;
  hooks_ = &hooks;
  epoch_start_t_ = t_before_;
  if (shards_.is_server())
    serve();
  else
    work();
  {
    // Waits for every rank, and for server 0's last snapshot.
    WatchdogScope guard(watchdog_, "parameter-server window free", step_);
    shards_.close();
  }
  if (stopped_by_) return {};
  return evaluate_snapshots(hooks);
}

// ---- server ----

void AsyncTrainer::serve() {
  const int me = comm_.rank();
  const timespec pause{0, static_cast<long>(dist_.poll_us * 1000)};
  // The next epoch to snapshot (server 0).
  int64_t next = snapshots_.empty() ? 1 : snapshots_.back().epoch + 1;
  // Waiting for the workers is bounded too: the watchdog restarts whenever a push reaches
  // this shard or a worker counts itself done, so it fires only when no worker has made
  // progress for run.watchdog_s (a stopped or lost worker).
  int64_t seen = -1;
  while (true) {
    shards_.poll();
    const int64_t progress =
        shards_.read(me, ParamShards::kVersion) + shards_.read(me, ParamShards::kWorkersDone);
    if (progress != seen) {
      seen = progress;
      watchdog_.arm("waiting for any worker's push", progress);
    }
    if (me == 0) {
      // Workers count an epoch before they count themselves done, so reading "done" first
      // means every epoch of a finished job has been counted by the next read.
      const bool done = shards_.read(0, ParamShards::kWorkersDone) == workers_;
      const int64_t worker_epochs = shards_.read(0, ParamShards::kWorkerEpochs);
      for (; next <= cfg_.train.epochs && worker_epochs >= next * workers_; ++next) {
        snapshot(next);
        progress_.epoch = next;
        report_progress(true);
      }
      progress_.epoch = std::min(next, cfg_.train.epochs);
      report_progress(false);
      if (done) {
        shards_.add(0, ParamShards::kFinish, 1);  // no checkpoint after this
        break;
      }
      bool stop = false;
      if (checkpoint_wanted(&stop)) {
        if (stop) shards_.add(0, ParamShards::kStop, 1);
        shards_.add(0, ParamShards::kRequest, 1);
        ++handled_;
        {
          // Every worker pauses within one step of its own.
          WatchdogScope guard(watchdog_, "waiting for the workers to pause", handled_);
          while (shards_.read(0, ParamShards::kPaused) < workers_) {
            shards_.poll();
            watchdog_.poll();
            if (pause.tv_nsec > 0) nanosleep(&pause, nullptr);
          }
        }
        if (checkpoint_collective(0, 0)) return;
        seen = -1;  // the checkpoint's own bounds disarmed the watchdog
      }
    } else {
      if (shards_.read(0, ParamShards::kFinish) > 0) break;
      if (shards_.read(0, ParamShards::kRequest) > handled_) {
        ++handled_;
        if (checkpoint_collective(0, 0)) return;
        seen = -1;
      }
    }
    watchdog_.poll();
    if (pause.tv_nsec > 0) nanosleep(&pause, nullptr);
  }
  watchdog_.disarm();
  if (me == 0) {
    // The final parameters, unless the last epoch's snapshot already holds them.
    snapshot(std::min(next, cfg_.train.epochs));
    const size_t n = snapshots_.size();
    if (n >= 2 && snapshots_[n - 1].pushes == snapshots_[n - 2].pushes) snapshots_.pop_back();
  }
}

void AsyncTrainer::snapshot(int64_t epoch) {
  Snapshot s{epoch, 0, 0, std::vector<float>(model_.num_params())};
  RmaStats unused;
  shards_.pull(s.params, pulled_versions_, unused);
  s.t = wall_s() - t0_;
  s.pushes = pulled_versions_[0];  // every push updates every shard
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

// ---- worker ----

void AsyncTrainer::work() {
  const int worker = comm_.rank() - shards_.servers();
  ShardPlan plan(splits_.train->size(), cfg_.train.batch, worker, workers_);
  const float scale = 1.0f / static_cast<float>(cfg_.train.batch);
  float* params = model_.params().data();
  const float* grads = model_.grads().data();
  float* pending = pending_.data();
  const int64_t n = model_.num_params();
  bool stopped = false;
  int64_t epoch = first_epoch_;
  for (; epoch <= cfg_.train.epochs && !stopped; ++epoch) {
    plan.begin_epoch(cfg_.train.seed, epoch);
    for (int64_t s = epoch == first_epoch_ ? first_step_ : 0; s < plan.steps_per_epoch(); ++s) {
      if (cfg_.train.max_steps > 0 && step_ >= cfg_.train.max_steps) {
        stopped = true;
        break;
      }
      if (checkpoint_requested() && pause_for_checkpoint(epoch, s)) return;
      if (prof_) prof_->begin_step(step_);
      if (step_ % dist_.n_fetch == 0) pull();
      lr_ = static_cast<float>(schedule_.at(step_));
      const auto rows = plan.rows(s);
      const Pass pass{true, cfg_.train.seed, step_, rows.data()};
      const double loss = compute_gradients(model_, loss_, *splits_.train, rows, labels_.data(), pass,
                                            scale, {}, prof_, &names_);
      bool applied = false;
      {
        ProfileScope timed(prof_, names_.update);
        add_l2(model_.ops(), decayed_, model_.params(), model_.grads(),
               static_cast<float>(cfg_.optimizer.l2));
        // Nothing non-finite is applied locally or pushed to the servers.
        const double grad_sq = sum_of_squares(model_.ops(), model_.grads());
        applied = guard_.check_local(grad_sq, model_, step_, epoch);
        if (applied) {
          clip_to_norm(model_.ops(), model_.grads(), std::sqrt(grad_sq), cfg_.optimizer.clip_norm);
          // Accumulate for the push, and keep learning locally until the next pull.
          model_.ops().axpy(n, 1.0f, grads, pending);
          model_.ops().sgd(n, lr_, 0.0f, grads, nullptr, params);
        }
      }
      if (applied) {
        epoch_loss_[epoch - 1] += loss;
        epoch_samples_[epoch - 1] += static_cast<double>(cfg_.train.batch);
      }
      epoch_steps_[epoch - 1] += 1;
      if (++pending_steps_ == dist_.n_push) push();
      if (prof_) prof_->end_step();
      ++step_;
    }
    if (pending_steps_ > 0) push();  // an epoch ends with everything pushed
    WatchdogScope guard(watchdog_, "worker-epoch count", step_);
    if (!stopped) {
      // Progress figures first: server 0 reads them once it sees the epoch counted.
      shards_.add(0, ParamShards::kWorkerSteps, static_cast<int64_t>(epoch_steps_[epoch - 1]));
      shards_.add(0, ParamShards::kStalenessSum, epoch_staleness_);
      shards_.add(0, ParamShards::kStalenessPushes, epoch_pushes_);
      epoch_staleness_ = epoch_pushes_ = 0;
      shards_.add(0, ParamShards::kWorkerEpochs, 1);
    }
  }
  {
    WatchdogScope guard(watchdog_, "worker done count", step_);
    for (int s = 0; s < shards_.servers(); ++s) shards_.add(s, ParamShards::kWorkersDone, 1);
  }
  work_s_ = wall_s() - t0_;
  // Until every worker is done, checkpoints still need this worker (it has nothing left:
  // its position says so). Waiting for the slower workers is bounded like any wait.
  const timespec pause{0, static_cast<long>(std::max(dist_.poll_us, 1.0) * 1000)};
  while (true) {
    bool finished = false, requested = false;
    {
      WatchdogScope guard(watchdog_, "waiting for the other workers", step_);
      while (!(finished = shards_.read(0, ParamShards::kFinish) > 0) &&
             !(requested = ckpt_ && request_pending())) {
        watchdog_.poll();
        nanosleep(&pause, nullptr);
      }
    }
    if (finished) return;
    if (pause_for_checkpoint(stopped ? epoch - 1 : epoch, 0)) return;
  }
}

void AsyncTrainer::pull() {
  WatchdogScope guard(watchdog_, "parameter pull", step_);
  ProfileScope timed(prof_, names_.pull);
  shards_.pull(model_.params(), pulled_versions_, rma_);
  if (w_bak_.size()) std::copy_n(model_.params().data(), w_bak_.size(), w_bak_.data());
  pushes_since_pull_ = 0;
}

void AsyncTrainer::push() {
  WatchdogScope guard(watchdog_, "parameter push", step_);
  ProfileScope timed(prof_, names_.push);
  const float lr = lr_;  // the rate of the push's last step
  const float* g = pending_.data();
  const int64_t n = pending_.size();
  VectorOps& ops = model_.ops();
  if (dist_.mode == "dcasgd") {
    const float* bak = w_bak_.data();
    float* ms = mean_square_.data();
    const DcAsgdStep step{lr, static_cast<float>(dist_.dc_lambda),
                          static_cast<float>(dist_.dc_lambda0), static_cast<float>(dist_.dc_eps),
                          dist_.dc_adaptive};
    if (step.adaptive) ops.mean_square(n, static_cast<float>(dist_.dc_ms_decay), g, ms);
    shards_.push_rmw(
        [&](float* w, int64_t first, int64_t count) {
          ops.dcasgd(count, step, g + first, bak + first, step.adaptive ? ms + first : nullptr, w);
        },
        prev_versions_, rma_);
  } else {
    ops.scaled_copy(n, -lr, g, update_.data());  // -lr * g == -(lr * g) exactly
    shards_.push_sum(update_.span(), prev_versions_, rma_);
  }
  // Staleness: updates by others between this worker's pull and this push, on the
  // stalest shard.
  int64_t tau = 0;
  for (size_t s = 0; s < prev_versions_.size(); ++s)
    tau = std::max(tau, prev_versions_[s] - pulled_versions_[s] - pushes_since_pull_);
  rma_.record_staleness(tau);
  epoch_staleness_ += std::max<int64_t>(tau, 0), ++epoch_pushes_;
  ++pushes_since_pull_;
  pending_.zero();
  pending_steps_ = 0;
}

// ---- checkpoints ----

bool AsyncTrainer::checkpoint_requested() {
  if (!ckpt_) return false;
  WatchdogScope guard(watchdog_, "checkpoint request check", step_);
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
    WatchdogScope guard(watchdog_, "checkpoint pause", step_);
    shards_.add(0, ParamShards::kPaused, 1);
  }
  return checkpoint_collective(epoch, step_in_epoch);
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

bool AsyncTrainer::checkpoint_collective(int64_t epoch, int64_t step_in_epoch) {
  WatchdogScope guard(watchdog_, "parameter-server checkpoint", step_);
  const int64_t n = model_.num_params();
  // Every worker's state goes to rank 0: its position and counts as JSON, then buffers.
  auto send_floats = [&](const float* p, int dest) { comm_.send(p, n, dest, 1); };
  if (!shards_.is_server()) {
    nlohmann::json w = {{"epoch", epoch},
                        {"step_in_epoch", step_in_epoch},
                        {"step", step_},
                        {"pushes_since_pull", pushes_since_pull_},
                        {"pulled_versions", pulled_versions_},
                        {"epoch_loss", epoch_loss_},
                        {"epoch_samples", epoch_samples_},
                        {"epoch_steps", epoch_steps_},
                        {"w_bak", w_bak_.size() > 0},
                        {"mean_square", mean_square_.size() > 0}};
    comm_.send(w.dump(), 0, 0);
    send_floats(model_.params().data(), 0);
    if (w_bak_.size()) send_floats(w_bak_.data(), 0);
    if (mean_square_.size()) send_floats(mean_square_.data(), 0);
  }
  int stop = 0;
  if (comm_.rank() == 0) {
    Checkpoint c;
    c.params.resize(n);
    std::vector<int64_t> versions(shards_.servers());
    RmaStats unused;
    shards_.pull(c.params, versions, unused);  // every worker waits: the shards are still
    c.global_step = versions[0];               // updates applied
    c.elapsed_s = wall_s() - t0_;
    c.counters.push_back({"ps.versions", versions});
    c.counters.push_back({"ps.worker_epochs", {shards_.read(0, ParamShards::kWorkerEpochs)}});
    std::vector<int64_t> meta;
    for (size_t k = 0; k < snapshots_.size(); ++k) {
      const Snapshot& sn = snapshots_[k];
      meta.insert(meta.end(), {sn.epoch, sn.pushes, static_cast<int64_t>(sn.t * 1e6)});
      c.buffers.push_back({"ps.snapshot" + std::to_string(k), sn.params});
    }
    c.counters.push_back({"ps.snapshots", meta});
    for (int r = shards_.servers(); r < comm_.size(); ++r) {
      nlohmann::json w = nlohmann::json::parse(comm_.recv_string(r, 0));
      const std::string key = "worker" + std::to_string(r - shards_.servers());
      for (const char* buf : {"params", "w_bak", "mean_square"}) {
        if (std::string(buf) != "params" && !w[buf].get<bool>()) continue;
        std::vector<float> v(n);
        comm_.recv(v.data(), n, r, 1);
        c.buffers.push_back({key + "." + buf, std::move(v)});
      }
      // The run's position for the log: the slowest worker's.
      if (r == shards_.servers() || w["epoch"].get<int64_t>() < c.epoch) {
        c.epoch = w["epoch"], c.epoch_step = w["step_in_epoch"];
      }
      c.extra["workers"].push_back(std::move(w));
    }
    total_pushes_ = versions[0];
    ckpt_->write(std::move(c));
    stop = shards_.read(0, ParamShards::kStop) > 0 ? 1 : 0;
    shards_.add(0, ParamShards::kPaused, -workers_);
    last_ckpt_t_ = wall_s() - t0_;
  }
  // Nobody moves on before rank 0 has read the shards and written the file.
  comm_.broadcast(&stop, 1, 0);
  if (stop) stopped_by_ = stop_signal() ? stop_signal() : SIGUSR1;
  return stop != 0;
}

void AsyncTrainer::restore(const Checkpoint& c) {
  t_before_ = c.elapsed_s;
  const std::vector<int64_t>* versions = c.counter("ps.versions");
  const std::vector<int64_t>* epochs = c.counter("ps.worker_epochs");
  if (!versions || static_cast<int>(versions->size()) != shards_.servers() || !epochs ||
      !c.extra.contains("workers") || static_cast<int>(c.extra["workers"].size()) != workers_)
    throw AgreedError("checkpoint holds no parameter-server state for " +
                      std::to_string(shards_.servers()) + " server(s) and " +
                      std::to_string(workers_) + " workers");
  const int me = comm_.rank();
  if (shards_.is_server()) {
    shards_.set_own(ParamShards::kVersion, (*versions)[me]);
    if (me == 0) {
      shards_.set_own(ParamShards::kWorkerEpochs, epochs->front());
      const std::vector<int64_t>* meta = c.counter("ps.snapshots");
      for (size_t k = 0; meta && 3 * k + 2 < meta->size(); ++k) {
        const std::vector<float>* p = c.buffer("ps.snapshot" + std::to_string(k));
        if (!p) throw AgreedError("checkpoint lacks snapshot " + std::to_string(k));
        snapshots_.push_back(
            {(*meta)[3 * k], double((*meta)[3 * k + 2]) / 1e6, (*meta)[3 * k + 1], *p});
      }
    }
    return;
  }
  const int k = me - shards_.servers();
  const nlohmann::json& w = c.extra["workers"][k];
  const std::string key = "worker" + std::to_string(k);
  auto take = [&](const std::string& name, float* dst) {
    const std::vector<float>* v = c.buffer(key + "." + name);
    if (!v || static_cast<int64_t>(v->size()) != model_.num_params())
      throw AgreedError("checkpoint lacks " + key + "." + name);
    std::copy(v->begin(), v->end(), dst);
  };
  take("params", model_.params().data());
  if (w_bak_.size()) take("w_bak", w_bak_.data());
  if (mean_square_.size()) take("mean_square", mean_square_.data());
  first_epoch_ = w.at("epoch"), first_step_ = w.at("step_in_epoch");
  step_ = w.at("step");
  pushes_since_pull_ = w.at("pushes_since_pull");
  pulled_versions_ = w.at("pulled_versions").get<std::vector<int64_t>>();
  auto per_epoch = [&](const char* name, std::vector<double>& dst) {
    const auto v = w.at(name).get<std::vector<double>>();
    for (size_t e = 0; e < v.size() && e < dst.size(); ++e) dst[e] = v[e];
  };
  per_epoch("epoch_loss", epoch_loss_);
  per_epoch("epoch_samples", epoch_samples_);
  per_epoch("epoch_steps", epoch_steps_);
}

// ---- after training ----

std::vector<EpochStats> AsyncTrainer::evaluate_snapshots(const TrainHooks& hooks) {
  const int64_t E = cfg_.train.epochs;
  std::vector<double> sums(3 * E);
  std::copy(epoch_loss_.begin(), epoch_loss_.end(), sums.begin());
  std::copy(epoch_samples_.begin(), epoch_samples_.end(), sums.begin() + E);
  std::copy(epoch_steps_.begin(), epoch_steps_.end(), sums.begin() + 2 * E);
  int64_t count = static_cast<int64_t>(snapshots_.size());
  {
    WatchdogScope guard(watchdog_, "parameter-server results", step_);
    comm_.allreduce_sum(sums.data(), 3 * E);
    comm_.broadcast(&count, 1, 0);
  }
  std::vector<EpochStats> history;
  double t_prev = 0;
  for (int64_t k = 0; k < count; ++k) {
    double meta[3] = {0, 0, 0};
    if (comm_.rank() == 0) {
      const Snapshot& s = snapshots_[k];
      meta[0] = double(s.epoch), meta[1] = s.t, meta[2] = double(s.pushes);
      std::copy(s.params.begin(), s.params.end(), model_.params().data());
    }
    {
      WatchdogScope guard(watchdog_, "snapshot broadcast", step_);
      comm_.broadcast(meta, 3, 0);
      comm_.broadcast(model_.params().data(), model_.num_params(), 0);
    }
    EpochStats st;
    st.epoch = static_cast<int64_t>(meta[0]);
    const int64_t e = st.epoch - 1;
    const double samples = sums[E + e];
    st.steps = static_cast<int64_t>(sums[2 * E + e]);
    st.train_loss = samples > 0 ? sums[e] / samples : 0;
    if (!std::isfinite(st.train_loss)) {
      throw AgreedError("training diverged: the mean training loss of epoch " +
                        std::to_string(st.epoch) +
                        " is not finite (lower optimizer.lr or set optimizer.clip_norm)");
    }
    st.epoch_s = meta[1] - t_prev;
    st.train_s = st.elapsed_s = meta[1];
    st.samples_per_s = st.epoch_s > 0 ? samples / st.epoch_s : 0;
    t_prev = meta[1];
    total_pushes_ = static_cast<int64_t>(meta[2]);
    st.lr = schedule_.at(std::max<int64_t>(st.epoch * schedule_.steps_per_epoch() - 1, 0));
    evaluate_epoch(evaluator_, splits_, total_pushes_, st);
    history.push_back(st);
    if (hooks.on_epoch) hooks.on_epoch(st);
    selector_.observe(st, model_.params());
  }
  final_ = selector_.finish(model_, evaluator_, splits_, history, total_pushes_, false);
  return history;
}

nlohmann::json AsyncTrainer::worker_report() const {
  if (shards_.is_server()) return nullptr;
  const StalenessSummary stale = summarize_staleness(rma_.staleness);
  return {{"rank", comm_.rank()},
          {"steps", step_},
          {"pulls", rma_.pulls},
          {"pushes", rma_.pushes},
          {"pull_s", rma_.pull_s},
          {"push_s", rma_.push_s},
          {"lock_wait_s", rma_.lock_wait_s},
          {"work_s", work_s_},
          {"rma_fraction", work_s_ > 0 ? (rma_.pull_s + rma_.push_s) / work_s_ : 0.0},
          {"staleness_mean", stale.mean},
          {"staleness_p95", stale.p95},
          {"staleness_histogram", rma_.staleness},
          {"nonfinite_skipped", guard_.skipped()}};
}

}  // namespace hpdl
