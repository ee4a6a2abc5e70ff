// The synchronous training loop. step() reads top to bottom: batch, forward, loss, zero
// grads, backward (starting the gradient allreduce), wait for it, L2, clip, update.
#include "hpdl/train/trainer.hpp"

#include <chrono>
#include <cmath>

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

SyncTrainer::SyncTrainer(const Config& cfg, const Comm& comm, Model& model, H5Split& train,
                         H5Split* test, Watchdog& watchdog)
    : cfg_(cfg),
      comm_(comm),
      model_(model),
      train_(train),
      test_(test),
      watchdog_(watchdog),
      plan_(train.size(), cfg.train.batch, comm.rank(), comm.size()),
      loss_(model.batch(), cfg.model.classes),
      optimizer_(make_optimizer(cfg.optimizer, model.num_params())),
      reducer_(comm, model,
               static_cast<int64_t>(cfg.distributed.bucket_mb * (1 << 20) / sizeof(float)),
               watchdog),
      labels_(model.batch()),
      confusion_(cfg.model.classes) {
  HPDL_REQUIRE(model.batch() == plan_.local_batch(), "model batch does not match the rank's batch");
}

double SyncTrainer::step(std::span<const int64_t> rows, int64_t global_step) {
  train_.read_rows(rows, model_.input(), labels_.data());
  const Pass pass{true, cfg_.train.seed, global_step, rows.data()};
  model_.forward(pass);
  const double loss = loss_.forward(model_.output(), labels_.data(), model_.batch());

  model_.zero_grads();
  loss_.backward(labels_.data(), 1.0f / static_cast<float>(cfg_.train.batch), model_.output_grad());
  model_.backward(pass, [this](size_t layer) { reducer_.layer_done(layer); });
  reducer_.finish(global_step);  // grads() now holds the sum over ranks
  add_l2(model_.segments(), model_.params(), model_.grads(), static_cast<float>(cfg_.optimizer.l2));
  clip_by_global_norm(model_.grads(), cfg_.optimizer.clip_norm);
  optimizer_->update(model_.params(), model_.grads());
  return loss;
}

double SyncTrainer::evaluate(H5Split& split, ConfusionMatrix& confusion) {
  int64_t begin = 0, end = 0;
  block_range(split.size(), comm_.rank(), comm_.size(), &begin, &end);
  confusion.clear();
  double loss_sum = 0;
  const int64_t B = model_.batch();
  for (int64_t b = begin; b < end; b += B) {
    const int64_t n = std::min(B, end - b);  // the rest of the batch is padding, ignored
    split.read_range(b, b + n, model_.input(), labels_.data());
    for (int64_t i = n; i < B; ++i) labels_[i] = 0;
    model_.forward(Pass{});
    loss_sum += loss_.forward(model_.output(), labels_.data(), n);
    for (int64_t i = 0; i < n; ++i) confusion.add(labels_[i], loss_.predicted(i));
  }
  WatchdogScope guard(watchdog_, "evaluation allreduce", global_step_);
  comm_.allreduce_sum(confusion.data(), confusion.classes() * confusion.classes());
  comm_.allreduce_sum(&loss_sum, 1);
  return confusion.total() ? loss_sum / confusion.total() : 0.0;
}

std::vector<EpochStats> SyncTrainer::run(const TrainHooks& hooks) {
  std::vector<EpochStats> history;
  const auto t_start = std::chrono::steady_clock::now();
  const int64_t steps = plan_.steps_per_epoch();
  for (int64_t epoch = 1; epoch <= cfg_.train.epochs; ++epoch) {
    const auto t_epoch = std::chrono::steady_clock::now();
    plan_.begin_epoch(cfg_.train.seed, epoch);
    double loss_sum = 0;
    int64_t done = 0;
    for (int64_t s = 0; s < steps; ++s) {
      if (cfg_.train.max_steps > 0 && global_step_ >= cfg_.train.max_steps) break;
      loss_sum += step(plan_.local_rows(s), global_step_);
      ++global_step_, ++done;
      if (hooks.on_step) {
        const double t = seconds_since(t_epoch);
        hooks.on_step(epoch, s, steps, loss_sum / (done * plan_.local_batch()),
                      done * cfg_.train.batch / t);
      }
    }
    EpochStats st;
    st.epoch = epoch;
    st.steps = done;
    st.epoch_s = seconds_since(t_epoch);
    {
      WatchdogScope guard(watchdog_, "loss allreduce", global_step_);
      comm_.allreduce_sum(&loss_sum, 1);
    }
    st.train_loss = done ? loss_sum / (double(done) * cfg_.train.batch) : 0;
    if (!std::isfinite(st.train_loss)) {
      throw AgreedError("training diverged: the mean training loss of epoch " +
                        std::to_string(epoch) +
                        " is not finite (lower optimizer.lr or set optimizer.clip_norm)");
    }
    st.samples_per_s = st.epoch_s > 0 ? done * cfg_.train.batch / st.epoch_s : 0;
    if (test_) {
      st.test_loss = evaluate(*test_, confusion_);
      st.test_accuracy = confusion_.accuracy();
      st.test_f1 = confusion_.weighted_f1();
    }
    st.elapsed_s = seconds_since(t_start);
    history.push_back(st);
    if (hooks.on_epoch) hooks.on_epoch(st);
    if (cfg_.train.max_steps > 0 && global_step_ >= cfg_.train.max_steps) break;
  }
  return history;
}

}  // namespace hpdl
