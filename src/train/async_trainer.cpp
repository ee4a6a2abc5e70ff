// The parameter-server trainer: the server loop, the worker loop with its pull and push,
// and the evaluation of server 0's snapshots once everyone is done. Compiled without
// floating-point contraction so that the server's w + (-lr*g) is bit-identical to a
// local w - lr*g (the equivalence tests rely on it).
#include "hpdl/train/async_trainer.hpp"

#include <time.h>

#include <algorithm>
#include <cmath>

#include "hpdl/core/error.hpp"
#include "hpdl/optim/optimizer.hpp"

namespace hpdl {

AsyncTrainer::AsyncTrainer(const Config& cfg, const Comm& comm, Model& model, H5Split& train,
                           H5Split* test, Watchdog& watchdog, Profiler* prof)
    : cfg_(cfg),
      dist_(cfg.distributed),
      comm_(comm),
      model_(model),
      train_(train),
      test_(test),
      watchdog_(watchdog),
      workers_(comm.size() - static_cast<int>(cfg.distributed.servers)),
      shards_(comm, static_cast<int>(cfg.distributed.servers), model.params()),
      loss_(model.batch(), cfg.model.classes),
      labels_(model.batch()),
      evaluator_(comm, model, cfg.model.classes, watchdog),
      prof_(prof),
      names_(prof),
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

std::vector<EpochStats> AsyncTrainer::run(const TrainHooks& hooks) {
  {
    WatchdogScope guard(watchdog_, "parameter-server start", 0);
    comm_.barrier();
  }
  t0_ = MPI_Wtime();
  if (shards_.is_server())
    serve();
  else
    work();
  {
    // Waits for every rank, and for server 0's last snapshot.
    WatchdogScope guard(watchdog_, "parameter-server window free", step_);
    shards_.close();
  }
  return evaluate_snapshots(hooks);
}

// ---- server ----

void AsyncTrainer::serve() {
  const int me = comm_.rank();
  const timespec pause{0, static_cast<long>(dist_.poll_us * 1000)};
  int64_t next = 1;  // the next epoch to snapshot (server 0)
  while (true) {
    shards_.poll();
    // Workers count an epoch before they count themselves done, so reading "done" first
    // means every epoch of a finished job has been counted by the next read.
    const bool done = shards_.read(me, ParamShards::kWorkersDone) == workers_;
    if (me == 0) {
      const int64_t worker_epochs = shards_.read(0, ParamShards::kWorkerEpochs);
      for (; next <= cfg_.train.epochs && worker_epochs >= next * workers_; ++next) snapshot(next);
    }
    if (done) break;
    if (pause.tv_nsec > 0) nanosleep(&pause, nullptr);
  }
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
  s.t = MPI_Wtime() - t0_;
  s.pushes = pulled_versions_[0];  // every push updates every shard
  snapshots_.push_back(std::move(s));
}

// ---- worker ----

void AsyncTrainer::work() {
  const int worker = comm_.rank() - shards_.servers();
  ShardPlan plan(train_.size(), cfg_.train.batch, worker, workers_);
  const float lr = static_cast<float>(cfg_.optimizer.lr);
  const float scale = 1.0f / static_cast<float>(cfg_.train.batch);
  float* params = model_.params().data();
  const float* grads = model_.grads().data();
  float* pending = pending_.data();
  const int64_t n = model_.num_params();
  bool stopped = false;
  for (int64_t epoch = 1; epoch <= cfg_.train.epochs && !stopped; ++epoch) {
    plan.begin_epoch(cfg_.train.seed, epoch);
    for (int64_t s = 0; s < plan.steps_per_epoch(); ++s) {
      if (cfg_.train.max_steps > 0 && step_ >= cfg_.train.max_steps) {
        stopped = true;
        break;
      }
      if (prof_) prof_->begin_step(step_);
      if (step_ % dist_.n_fetch == 0) pull();
      const auto rows = plan.rows(s);
      const Pass pass{true, cfg_.train.seed, step_, rows.data()};
      epoch_loss_[epoch - 1] += compute_gradients(model_, loss_, train_, rows, labels_.data(), pass,
                                                  scale, {}, prof_, &names_);
      {
        ProfileScope timed(prof_, names_.update);
        add_l2(model_.segments(), model_.params(), model_.grads(),
               static_cast<float>(cfg_.optimizer.l2));
        clip_by_global_norm(model_.grads(), cfg_.optimizer.clip_norm);
        // Accumulate for the push, and keep learning locally until the next pull.
#pragma omp parallel for simd if (parallel : n > (1 << 16))
        for (int64_t i = 0; i < n; ++i) {
          pending[i] += grads[i];
          params[i] -= lr * grads[i];
        }
      }
      epoch_samples_[epoch - 1] += static_cast<double>(cfg_.train.batch);
      epoch_steps_[epoch - 1] += 1;
      if (++pending_steps_ == dist_.n_push) push();
      if (prof_) prof_->end_step();
      ++step_;
    }
    if (pending_steps_ > 0) push();  // an epoch ends with everything pushed
    WatchdogScope guard(watchdog_, "worker-epoch count", step_);
    if (!stopped) shards_.add(0, ParamShards::kWorkerEpochs, 1);
  }
  WatchdogScope guard(watchdog_, "worker done count", step_);
  for (int s = 0; s < shards_.servers(); ++s) shards_.add(s, ParamShards::kWorkersDone, 1);
  work_s_ = MPI_Wtime() - t0_;
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
  const float lr = static_cast<float>(cfg_.optimizer.lr);
  const float* g = pending_.data();
  const int64_t n = pending_.size();
  if (dist_.mode == "dcasgd") {
    const float* bak = w_bak_.data();
    float* ms = mean_square_.data();
    const bool adaptive = dist_.dc_adaptive;
    const float lambda = static_cast<float>(dist_.dc_lambda);
    const float lambda0 = static_cast<float>(dist_.dc_lambda0);
    const float m = static_cast<float>(dist_.dc_ms_decay), eps = static_cast<float>(dist_.dc_eps);
    if (adaptive) {
#pragma omp parallel for simd if (parallel : n > (1 << 16))
      for (int64_t i = 0; i < n; ++i) ms[i] = m * ms[i] + (1 - m) * g[i] * g[i];
    }
    shards_.push_rmw(
        [&](float* w, int64_t first, int64_t count) {
#pragma omp parallel for simd if (parallel : count > (1 << 16))
          for (int64_t i = 0; i < count; ++i) {
            const int64_t j = first + i;
            const float lam = adaptive ? lambda0 / std::sqrt(ms[j] + eps) : lambda;
            w[i] = w[i] - lr * (g[j] + lam * g[j] * g[j] * (w[i] - bak[j]));
          }
        },
        prev_versions_, rma_);
  } else {
    float* u = update_.data();
#pragma omp parallel for simd if (parallel : n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) u[i] = -(lr * g[i]);
    shards_.push_sum(update_.span(), prev_versions_, rma_);
  }
  // Staleness: updates by others between this worker's pull and this push, on the
  // stalest shard.
  int64_t tau = 0;
  for (size_t s = 0; s < prev_versions_.size(); ++s)
    tau = std::max(tau, prev_versions_[s] - pulled_versions_[s] - pushes_since_pull_);
  rma_.record_staleness(tau);
  ++pushes_since_pull_;
  pending_.zero();
  pending_steps_ = 0;
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
    HPDL_CHECK_MPI(MPI_Bcast(&count, 1, MPI_INT64_T, 0, comm_.raw()));
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
      HPDL_CHECK_MPI(MPI_Bcast(meta, 3, MPI_DOUBLE, 0, comm_.raw()));
      HPDL_CHECK_MPI(MPI_Bcast(model_.params().data(), static_cast<int>(model_.num_params()),
                               MPI_FLOAT, 0, comm_.raw()));
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
    if (test_) {
      st.test_loss = evaluator_.run(*test_, total_pushes_);
      st.test_accuracy = evaluator_.confusion().accuracy();
      st.test_f1 = evaluator_.confusion().weighted_f1();
    }
    history.push_back(st);
    if (hooks.on_epoch) hooks.on_epoch(st);
  }
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
          {"staleness_histogram", rma_.staleness}};
}

}  // namespace hpdl
