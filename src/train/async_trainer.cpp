// The parameter-server trainer's start and end (see async_trainer.hpp): set-up, the
// collective run of each rank's role, the checkpoint collective every rank joins, resuming,
// and the evaluation of server 0's snapshots once everyone is done.
#include "hpdl/train/async_trainer.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>

#include "hpdl/core/error.hpp"
#include "hpdl/core/stop_signal.hpp"

namespace hpdl {

AsyncTrainer::AsyncTrainer(const TrainerConfig& cfg, Comm& comm, Model& model, const Splits& splits,
                           Watchdog& watchdog, Profiler* prof)
    : cfg_(cfg),  // the members below keep references into this copy
      comm_(comm),
      model_(model),
      watchdog_(watchdog),
      train_rows_(splits.train->size()),
      shards_(comm, static_cast<int>(cfg_.distributed.servers), model.params_to_host()),
      ctx_{cfg_, comm, shards_, watchdog, prof, nullptr, 0, {}},
      // Every worker's steps per epoch are worker 0's or one fewer; rank 0 (a server) reports
      // worker 0's rate per epoch.
      schedule_(
          cfg_.optimizer, cfg_.train,
          ShardPlan(splits.train->size(), cfg_.train.batch, 0, ctx_.workers()).steps_per_epoch()),
      keeper_(cfg_, comm, model, splits, watchdog) {
  model.set_profiler(prof);
  shards_.set_profiler(prof);
  ctx_.checkpoint = [this](int64_t epoch, int64_t step) {
    return checkpoint_collective(epoch, step);
  };
  if (shards_.is_server())
    server_ = std::make_unique<PsServer>(ctx_, model.num_params(), schedule_.steps_per_epoch());
  else
    worker_ = std::make_unique<PsWorker>(ctx_, model, splits);
}

AsyncTrainer::~AsyncTrainer() = default;

std::vector<EpochStats> AsyncTrainer::run(const TrainHooks& hooks, Checkpointer* ckpt,
                                          const Checkpoint* from) {
  // Nothing can ask for a checkpoint: the workers skip the per-step request check.
  const bool any = ckpt && (ckpt->config().on_signal || ckpt->config().every_steps > 0 ||
                            ckpt->config().every_s > 0);
  ctx_.ckpt = any ? ckpt : nullptr;
  if (from) restore(*from);
  shards_.open();
  if (server_) server_->start(from ? from->global_step : 0, t_before_);
  {
    WatchdogScope guard(watchdog_, "parameter-server start", 0);
    comm_.barrier();
  }
  ctx_.t0 = PsContext::wall_s() - t_before_;
  const bool finished = server_ ? server_->serve(hooks) : worker_->work();
  {
    WatchdogScope guard(watchdog_, "leaving out dropped workers", 0);
    leave_out_dropped();
  }
  {
    // Waits for every rank, and for server 0's last snapshot.
    WatchdogScope guard(watchdog_, "parameter-server window free", 0);
    shards_.close();
  }
  if (!finished) return {};
  return evaluate_snapshots(hooks);
}

void AsyncTrainer::leave_out_dropped() {
  const std::vector<int> gone = shards_.gone_workers();
  std::vector<int> ranks;  // the newly dropped, numbered as the Comm numbers them now
  for (int k : gone) {
    if (std::find(left_out_.begin(), left_out_.end(), k) != left_out_.end()) continue;
    if (worker_ && k == worker_->index()) throw ParamShards::dropped_error();
    const auto before =
        std::count_if(left_out_.begin(), left_out_.end(), [k](int j) { return j < k; });
    ranks.push_back(shards_.servers() + k - static_cast<int>(before));
  }
  if (ranks.empty()) return;
  comm_.leave_out(ranks);
  left_out_.insert(left_out_.end(), gone.begin(), gone.end());
  std::sort(left_out_.begin(), left_out_.end());
  left_out_.erase(std::unique(left_out_.begin(), left_out_.end()), left_out_.end());
}

bool AsyncTrainer::checkpoint_collective(int64_t epoch, int64_t step_in_epoch) {
  WatchdogScope guard(watchdog_, "parameter-server checkpoint", epoch);
  leave_out_dropped();
  if (worker_)
    worker_->send_checkpoint(epoch, step_in_epoch);
  else if (comm_.rank() > 0)
    send_shard(comm_, shards_.own_version(), server_->slices());
  int stop = 0;
  if (comm_.rank() == 0) {
    Checkpoint c;
    // Every worker waits with its last push applied: the shards are still.
    std::vector<int64_t> begin;
    for (int s = 0; s <= shards_.servers(); ++s)
      begin.push_back(s < shards_.servers() ? shards_.shard_begin(s) : model_.num_params());
    const std::vector<int64_t> versions = gather_shards(
        comm_, begin, model_.num_params(), shards_.own_version(), server_->slices(), c);
    c.global_step = versions[0];  // updates applied
    c.elapsed_s = ctx_.elapsed_s();
    c.counters.push_back({"ps.versions", versions});
    c.counters.push_back({"ps.worker_epochs", {shards_.read(0, ParamShards::kWorkerEpochs)}});
    server_->add_snapshots(c);
    const std::vector<WorkerState> states =
        gather_workers(comm_, shards_.servers(), model_.num_params(), c);
    // The run's position for the log: the slowest worker's.
    for (size_t k = 0; k < states.size(); ++k)
      if (k == 0 || states[k].epoch < c.epoch)
        c.epoch = states[k].epoch, c.epoch_step = states[k].step_in_epoch;
    total_pushes_ = versions[0];
    ctx_.ckpt->write(std::move(c));
    stop = shards_.read(0, ParamShards::kStop) > 0 ? 1 : 0;
    shards_.add(0, ParamShards::kPaused, -ctx_.workers());
    server_->checkpointed(ctx_.elapsed_s());
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
  const int workers = ctx_.workers();
  const int written_by = checkpoint_workers(c);
  if (!versions || static_cast<int>(versions->size()) != shards_.servers() || !epochs ||
      epochs->empty() || written_by < 1)
    throw AgreedError("checkpoint holds no parameter-server state for " +
                      std::to_string(shards_.servers()) + " server(s)");
  // Another worker count: positions redistributed (ps_checkpoint.hpp states the rule).
  // (or one written after the servers dropped a worker: its workers' slices were another
  // count's).
  const bool carry_over = written_by == workers && positions_carry_over(c, comm_.size());
  WorkerRedistribution r;
  if (!carry_over) r = redistribution(c, workers, train_rows_, cfg_.train.batch);
  const WorkerRedistribution* other = carry_over ? nullptr : &r;
  if (server_)
    server_->restore(c, other);
  else
    worker_->restore(c, other);
}

// ---- after training ----

std::vector<EpochStats> AsyncTrainer::evaluate_snapshots(const TrainHooks& hooks) {
  const int64_t E = cfg_.train.epochs;
  std::vector<double> sums(3 * E);
  if (worker_) {
    const WorkerState& pos = worker_->position();
    std::copy(pos.epoch_loss.begin(), pos.epoch_loss.end(), sums.begin());
    std::copy(pos.epoch_samples.begin(), pos.epoch_samples.end(), sums.begin() + E);
    std::copy(pos.epoch_steps.begin(), pos.epoch_steps.end(), sums.begin() + 2 * E);
  }
  const bool root = comm_.rank() == 0;
  int64_t count = root ? static_cast<int64_t>(server_->snapshots().size()) : 0;
  {
    WatchdogScope guard(watchdog_, "parameter-server results", 0);
    comm_.allreduce_sum(sums.data(), 3 * E);
    comm_.broadcast(&count, 1, 0);
  }
  std::vector<EpochStats> history;
  double t_prev = 0;
  std::vector<float> params(static_cast<size_t>(model_.num_params()));
  for (int64_t k = 0; k < count; ++k) {
    double meta[3] = {0, 0, 0};
    if (root) {
      const PsServer::Snapshot& s = server_->snapshots()[k];
      meta[0] = double(s.epoch), meta[1] = s.t, meta[2] = double(s.pushes);
      params = s.params;
    }
    {
      WatchdogScope guard(watchdog_, "snapshot broadcast", k);
      comm_.broadcast(meta, 3, 0);
      comm_.broadcast(params.data(), model_.num_params(), 0);
    }
    model_.params_from_host(params);
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
    keeper_.evaluate(total_pushes_, st);
    history.push_back(st);
    if (hooks.on_epoch) hooks.on_epoch(st);
    keeper_.observe(st);
  }
  keeper_.finish(history, total_pushes_, false);
  return history;
}

WorkerReport AsyncTrainer::worker_report() const {
  return worker_ ? worker_->report() : WorkerReport{};
}

std::vector<PsServer::Left> AsyncTrainer::workers_left() const {
  return server_ && comm_.rank() == 0 ? server_->left() : std::vector<PsServer::Left>{};
}

std::vector<int64_t> AsyncTrainer::pushes_at_first_done() const {
  return server_ ? server_->pushes_at_first_done() : std::vector<int64_t>{};
}

}  // namespace hpdl
