// The parameter-server trainer's start and end (see async_trainer.hpp): set-up, the
// collective run, the checkpoint collective every rank joins, resuming, and the evaluation
// of server 0's snapshots once everyone is done.
#include "hpdl/train/async_trainer.hpp"

#include <cmath>
#include <csignal>

#include "hpdl/core/error.hpp"
#include "hpdl/core/stop_signal.hpp"

namespace hpdl {

AsyncTrainer::AsyncTrainer(const Config& cfg, const Comm& comm, Model& model, const Splits& splits,
                           Watchdog& watchdog, Profiler* prof)
    : cfg_(cfg),
      dist_(cfg.distributed),
      comm_(comm),
      model_(model),
      decayed_(model.decayed_ranges()),
      splits_(splits),
      watchdog_(watchdog),
      workers_(comm.size() - static_cast<int>(cfg.distributed.servers)),
      shards_(comm, static_cast<int>(cfg.distributed.servers), model.params_to_host()),
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
      prev_versions_(cfg.distributed.servers) {
  HPDL_REQUIRE(model.batch() == cfg.train.batch, "model batch does not match train.batch");
  model.set_profiler(prof);
  shards_.set_profiler(prof);
  pos_.pulled_versions.assign(cfg.distributed.servers, 0);
  for (auto* v : {&pos_.epoch_loss, &pos_.epoch_samples, &pos_.epoch_steps})
    v->assign(cfg.train.epochs, 0.0);
  if (shards_.is_server()) {
    // The rule runs on the server's shard, in host memory, with the CPU's operations.
    server_ops_ = make_cpu_vector_ops();
    rule_ = make_update_rule(dist_, workers_, shards_.shard_size(comm.rank()), *server_ops_);
    apply_ = [this](int worker, const float* g, float lr, float* w, const float* bak, int64_t n) {
      rule_->apply(worker, g, lr, w, bak, n);
    };
    return;
  }
  pending_ = Buffer(model.num_params(), model.device());
  pending_host_ = HostMirror(model.device(), pending_.span());
  params_host_ = HostMirror(model.device(), model.params());
}

AsyncTrainer::~AsyncTrainer() = default;

std::vector<EpochStats> AsyncTrainer::run(const TrainHooks& hooks, Checkpointer* ckpt,
                                          const Checkpoint* from) {
  // Nothing can ask for a checkpoint: the workers skip the per-step request check.
  const bool any = ckpt && (ckpt->config().on_signal || ckpt->config().every_steps > 0 ||
                            ckpt->config().every_s > 0);
  ckpt_ = any ? ckpt : nullptr;
  if (from) restore(*from);
  shards_.open();
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
    WatchdogScope guard(watchdog_, "parameter-server window free", pos_.step);
    shards_.close();
  }
  if (stopped_by_) return {};
  return evaluate_snapshots(hooks);
}

bool AsyncTrainer::checkpoint_collective(int64_t epoch, int64_t step_in_epoch) {
  WatchdogScope guard(watchdog_, "parameter-server checkpoint", pos_.step);
  if (!shards_.is_server()) {
    pos_.epoch = epoch, pos_.step_in_epoch = step_in_epoch;
    params_host_.download();
    send_worker(comm_, pos_, worker_buffers());
  } else if (comm_.rank() > 0) {
    send_shard(comm_, shards_.own_version(), server_slices());
  }
  int stop = 0;
  if (comm_.rank() == 0) {
    Checkpoint c;
    // Every worker waits with its last push applied: the shards are still.
    std::vector<int64_t> begin;
    for (int s = 0; s <= shards_.servers(); ++s)
      begin.push_back(s < shards_.servers() ? shards_.shard_begin(s) : model_.num_params());
    const std::vector<int64_t> versions = gather_shards(
        comm_, begin, model_.num_params(), shards_.own_version(), server_slices(), c);
    c.global_step = versions[0];  // updates applied
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
    const std::vector<WorkerState> states =
        gather_workers(comm_, shards_.servers(), model_.num_params(), c);
    // The run's position for the log: the slowest worker's.
    for (size_t k = 0; k < states.size(); ++k)
      if (k == 0 || states[k].epoch < c.epoch)
        c.epoch = states[k].epoch, c.epoch_step = states[k].step_in_epoch;
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
    restore_shard(c, shards_.shard_begin(me), server_slices());
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
  pos_ = restore_worker(c, me - shards_.servers(), worker_buffers());
  params_host_.upload();
  // A run resumed with another number of epochs: per-epoch sums for this run's epochs.
  for (auto* v : {&pos_.epoch_loss, &pos_.epoch_samples, &pos_.epoch_steps})
    v->resize(cfg_.train.epochs, 0.0);
}

std::vector<NamedValues> AsyncTrainer::server_slices() {
  std::vector<NamedValues> out = {{"params", shards_.own_shard()}};
  for (int k = 0; k < workers_; ++k) {
    if (rule_->uses_backup()) out.push_back({worker_key(k) + ".w_bak", shards_.pulled_copy(k)});
    for (const UpdateRule::State& st : rule_->state(k))
      out.push_back({worker_key(k) + "." + st.name, st.values});
  }
  return out;
}

// ---- after training ----

std::vector<EpochStats> AsyncTrainer::evaluate_snapshots(const TrainHooks& hooks) {
  const int64_t E = cfg_.train.epochs;
  std::vector<double> sums(3 * E);
  std::copy(pos_.epoch_loss.begin(), pos_.epoch_loss.end(), sums.begin());
  std::copy(pos_.epoch_samples.begin(), pos_.epoch_samples.end(), sums.begin() + E);
  std::copy(pos_.epoch_steps.begin(), pos_.epoch_steps.end(), sums.begin() + 2 * E);
  int64_t count = static_cast<int64_t>(snapshots_.size());
  {
    WatchdogScope guard(watchdog_, "parameter-server results", pos_.step);
    comm_.allreduce_sum(sums.data(), 3 * E);
    comm_.broadcast(&count, 1, 0);
  }
  std::vector<EpochStats> history;
  double t_prev = 0;
  std::vector<float> params(comm_.rank() == 0 ? 0 : static_cast<size_t>(model_.num_params()));
  for (int64_t k = 0; k < count; ++k) {
    double meta[3] = {0, 0, 0};
    std::vector<float>& p = comm_.rank() == 0 ? snapshots_[k].params : params;
    if (comm_.rank() == 0) {
      const Snapshot& s = snapshots_[k];
      meta[0] = double(s.epoch), meta[1] = s.t, meta[2] = double(s.pushes);
    }
    {
      WatchdogScope guard(watchdog_, "snapshot broadcast", pos_.step);
      comm_.broadcast(meta, 3, 0);
      comm_.broadcast(p.data(), model_.num_params(), 0);
    }
    model_.params_from_host(p);
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
    selector_.observe(st, model_);
  }
  final_ = selector_.finish(model_, evaluator_, splits_, history, total_pushes_, false);
  return history;
}

nlohmann::json AsyncTrainer::worker_report() const {
  if (shards_.is_server()) return nullptr;
  const StalenessSummary stale = summarize_staleness(rma_.staleness);
  return {{"rank", comm_.rank()},
          {"steps", pos_.step},
          {"pulls", rma_.pulls},
          {"pushes", rma_.pushes},
          {"pull_s", rma_.pull_s},
          {"push_s", rma_.push_s},
          {"server_wait_s", rma_.server_wait_s},
          {"max_push_s", rma_.max_push_s},
          {"work_s", work_s_},
          {"rma_fraction", work_s_ > 0 ? (rma_.pull_s + rma_.push_s) / work_s_ : 0.0},
          {"staleness_mean", stale.mean},
          {"staleness_p95", stale.p95},
          {"staleness_histogram", rma_.staleness},
          {"nonfinite_skipped", guard_.skipped()}};
}

}  // namespace hpdl
