// The synchronous training loop. step() reads top to bottom: the rank's gradient (batch,
// forward, loss, backward, each finished layer starting its share of the allreduce), wait
// for the allreduce, L2 + NaN/Inf guard + clip, update (the last two: LocalStep).
#include "hpdl/train/trainer.hpp"

#include <chrono>
#include <cmath>

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {
// distributed.compression: the 16-bit format gradients or changes travel in (none: f32).
std::optional<HalfFormat> half_format(Compression c) {
  if (c == Compression::kBf16) return HalfFormat::kBf16;
  if (c == Compression::kFp16) return HalfFormat::kFp16;
  return std::nullopt;
}

LocalSgdSettings local_sgd(const DistributedConfig& d) {
  LocalSgdSettings s;
  s.every = d.sync_every, s.warmup_steps = d.local_warmup_steps;
  s.nesterov = d.outer == OuterStep::kNesterov;
  s.outer_lr = d.outer_lr, s.outer_momentum = d.outer_momentum;
  s.wire = half_format(d.compression);
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

SyncTrainer::SyncTrainer(const TrainerConfig& cfg, const Comm& comm, Model& model,
                         const Splits& splits, Watchdog& watchdog, Profiler* prof)
    : cfg_(cfg),  // the members below keep references into this copy
      comm_(comm),
      model_(model),
      watchdog_(watchdog),
      plan_(splits.train->size(), cfg_.train.batch, comm.rank(), comm.size()),
      prof_(prof),
      local_(cfg_, comm, model, *splits.train, watchdog, prof, plan_.steps_per_epoch()),
      reducer_(comm, model.device(), model.grads(), model.layer_ranges(),
               static_cast<int64_t>(cfg_.distributed.bucket_mb * (1 << 20) / sizeof(float)),
               watchdog,
               cfg_.distributed.sync_every > 1 ? std::nullopt
                                               : half_format(cfg_.distributed.compression),
               cfg_.distributed.shared_memory),
      averager_(comm, model.device(), model.params(), local_sgd(cfg_.distributed), watchdog),
      keeper_(cfg_, comm, model, splits, watchdog) {
  model.set_profiler(prof);
  reducer_.set_profiler(prof);
  const int64_t shards = cfg_.distributed.virtual_shards;  // a pass runs one shard
  HPDL_REQUIRE(model.batch() == (shards > 0 ? cfg_.train.batch / shards : plan_.local_batch()),
               "model batch does not match the rank's batch");
}

std::optional<double> SyncTrainer::step(std::span<const int64_t> rows,
                                        std::span<const int64_t> next_rows, int64_t global_step,
                                        int64_t epoch) {
  // A local step (local SGD) takes this rank's mean gradient and sends nothing.
  const bool local = averager_.local(global_step);
  const StepNames& names = local_.names();
  const double loss = local_.gradients(
      rows, global_step, 1.0f / static_cast<float>(local ? plan_.local_batch() : cfg_.train.batch),
      [this, local](size_t layer) {
        if (!local) reducer_.layer_done(layer);
      },
      next_rows,
      [this, local] {
        if (!local) reducer_.progress();
      });
  if (!local) {
    ProfileScope timed(prof_, names.comm_wait);
    reducer_.finish(global_step);  // grads() now holds the sum over ranks
  }
  DeviceScope timed(prof_, names.update);
  if (!local_.checked(local ? LocalStep::Gradient::kLocal : LocalStep::Gradient::kReduced, loss,
                      global_step, epoch)) {
    reducer_.clear_feedback();  // it may hold what rounding made of a non-finite gradient
    return std::nullopt;
  }
  local_.update(global_step);
  return loss;
}

std::optional<double> SyncTrainer::shard_step(int64_t s, int64_t global_step, int64_t epoch) {
  const int64_t shards = cfg_.distributed.virtual_shards, per = shards / comm_.size();
  const int64_t n = model_.num_params();
  shard_grads_.resize(static_cast<size_t>(per * n));
  double loss = 0;
  for (int64_t j = 0; j < per; ++j) {
    loss += local_.gradients(plan_.shard_rows(s, comm_.rank() * per + j, shards), global_step,
                             1.0f / static_cast<float>(cfg_.train.batch));
    const std::span<float> g = model_.grads();  // host memory: the CPU backends only
    std::copy(g.begin(), g.end(), shard_grads_.begin() + j * n);
  }
  {
    WatchdogScope guard(watchdog_, "virtual shards' gradient sum", global_step);
    comm_.ordered_sum(shard_grads_.data(), n, static_cast<int>(shards), model_.grads().data());
  }
  if (!local_.checked(LocalStep::Gradient::kReduced, loss, global_step, epoch)) return std::nullopt;
  local_.update(global_step);
  return loss;
}

std::vector<EpochStats> SyncTrainer::run(const TrainHooks& hooks, Checkpointer* ckpt,
                                         const Checkpoint* from) {
  std::vector<EpochStats> history;
  int64_t first_epoch = 1, first_step = 0;
  double resumed_loss = 0, resumed_epoch_s = 0, resumed_elapsed_s = 0;
  if (from) {
    restore(*from);
    history = from->history;
    first_epoch = from->epoch, first_step = from->epoch_step;
    // The epoch's loss so far is summed over all ranks: rank 0 carries it.
    resumed_loss = comm_.rank() == 0 ? from->epoch_loss_sum : 0;
    resumed_epoch_s = from->epoch_s, resumed_elapsed_s = from->elapsed_s;
  }
  const auto t_start = std::chrono::steady_clock::now();
  const int64_t steps = plan_.steps_per_epoch();
  if (from && first_step > steps) {
    throw AgreedError("checkpoint is damaged: it stands at step " + std::to_string(first_step) +
                      " of epoch " + std::to_string(first_epoch) + ", which has " +
                      std::to_string(steps) + " steps");
  }
  bool stop_early = false;
  for (int64_t epoch = first_epoch; epoch <= cfg_.train.epochs; ++epoch) {
    const auto t_epoch = std::chrono::steady_clock::now();
    const bool resumed = epoch == first_epoch && from;
    const double epoch_s0 = resumed ? resumed_epoch_s : 0;
    plan_.begin_epoch(cfg_.train.seed, epoch);
    double loss_sum = resumed ? resumed_loss : 0;
    int64_t done = resumed ? first_step : 0;
    int64_t skipped = 0;  // steps of this epoch (since this process started) not applied
    for (int64_t s = done; s < steps; ++s) {
      if (cfg_.train.max_steps > 0 && global_step_ >= cfg_.train.max_steps) break;
      const int64_t epoch_first = global_step_ - s;
      const bool last =
          s == steps - 1 || (cfg_.train.max_steps > 0 && global_step_ + 1 >= cfg_.train.max_steps);
      if (prof_) prof_->begin_step(global_step_);
      averager_.before_step(global_step_, epoch_first);
      const std::optional<double> loss =
          cfg_.distributed.virtual_shards > 0
              ? shard_step(s, global_step_, epoch)
              : step(plan_.local_rows(s), plan_.upcoming_rows(s + 1), global_step_, epoch);
      // Where the ranks meet: every step, or under local SGD an interval's end.
      bool met = !averager_.local(global_step_);
      if (averager_.ends_interval(global_step_, epoch_first, last)) {
        ProfileScope timed(prof_, local_.names().comm_wait);  // communication, as the buckets' wait
        averager_.average(global_step_);
        met = true;
      }
      if (prof_) prof_->end_step();
      if (loss) {
        loss_sum += *loss;
      } else {
        ++skipped;
        if (hooks.on_warning) hooks.on_warning(local_.guard().warning());
      }
      ++global_step_, ++done;
      if (hooks.on_step && done > skipped) {
        const double t = seconds_since(t_epoch);
        hooks.on_step(epoch, s, steps, loss_sum / ((done - skipped) * plan_.local_batch()),
                      done * cfg_.train.batch / t);
      }
      if (ckpt && ckpt->due(global_step_, met)) {
        ckpt->write(state(epoch, done, loss_sum, epoch_s0 + seconds_since(t_epoch),
                          resumed_elapsed_s + seconds_since(t_start), history));
        if ((stopped_by_ = ckpt->stop_signal()) != 0) {
          ckpt->finish(global_step_);
          return history;
        }
      }
    }
    EpochStats st;
    st.epoch = epoch;
    st.steps = done;
    st.epoch_s = epoch_s0 + seconds_since(t_epoch);
    {
      WatchdogScope guard(watchdog_, "loss allreduce", global_step_);
      comm_.allreduce_sum(&loss_sum, 1);
    }
    st.train_loss = done > skipped ? loss_sum / (double(done - skipped) * cfg_.train.batch) : 0;
    if (!std::isfinite(st.train_loss)) {
      throw AgreedError("training diverged: the mean training loss of epoch " +
                        std::to_string(epoch) +
                        " is not finite (lower optimizer.lr or set optimizer.clip_norm)");
    }
    st.samples_per_s = st.epoch_s > 0 ? done * cfg_.train.batch / st.epoch_s : 0;
    st.train_s = (history.empty() ? 0.0 : history.back().train_s) + st.epoch_s;
    st.lr = local_.lr(std::max<int64_t>(global_step_ - 1, 0));
    keeper_.evaluate(global_step_, st);
    st.elapsed_s = resumed_elapsed_s + seconds_since(t_start);
    history.push_back(st);
    if (hooks.on_epoch) hooks.on_epoch(st);
    stop_early = keeper_.observe(st);
    if (stop_early || (cfg_.train.max_steps > 0 && global_step_ >= cfg_.train.max_steps)) break;
  }
  if (ckpt) ckpt->finish(global_step_);
  keeper_.finish(history, global_step_, stop_early);
  return history;
}

namespace {
std::vector<float> host_copy(Device& device, std::span<const float> buf) {
  std::vector<float> host(buf.size());
  device.copy_to_host(host.data(), buf.data(), buf.size_bytes());
  return host;
}
}  // namespace

RankState SyncTrainer::own_state() {
  RankState own;
  if (averager_.on()) {
    own.push_back({"params", model_.params_to_host()});
    const OptimizerState opt = local_.optimizer().state();
    for (const auto& [name, buf] : opt.buffers)
      own.push_back({"optimizer." + name, host_copy(*opt.device, buf)});
  }
  std::span<float> feedback = averager_.on() ? averager_.feedback() : reducer_.feedback();
  if (!feedback.empty()) own.push_back({"feedback", {feedback.begin(), feedback.end()}});
  return own;
}

Checkpoint SyncTrainer::state(int64_t epoch, int64_t epoch_step, double loss_sum, double epoch_s,
                              double elapsed_s, const std::vector<EpochStats>& history) {
  // A checkpoint never holds a non-finite parameter (finite gradients can still overflow
  // them at a huge lr). Replicas are identical, so every rank reaches the same verdict;
  // under local SGD they differ between averages, and the ranks agree.
  std::string diverged;
  if (!std::isfinite(sum_of_squares(model_.ops(), model_.params()))) {
    const int64_t s = first_nonfinite_segment(model_.segments(), model_.params_to_host());
    diverged = "training diverged at step " + std::to_string(global_step_) + ": parameter '" +
               model_.segments()[s].name + "' is not finite; no checkpoint written (lower " +
               "optimizer.lr)";
  }
  if (averager_.on()) {
    WatchdogScope guard(watchdog_, "checkpoint agreement", global_step_);
    comm_.agree(diverged);
  } else if (!diverged.empty()) {
    throw AgreedError(diverged);
  }
  Checkpoint c;
  c.global_step = global_step_;
  c.epoch = epoch, c.epoch_step = epoch_step;
  c.epoch_loss_sum = loss_sum;
  {
    WatchdogScope guard(watchdog_, "checkpoint loss sum", global_step_);
    comm_.allreduce_sum(&c.epoch_loss_sum, 1);
    gather_rank_state(comm_, own_state(), c);
  }
  if (comm_.rank() != 0) return c;  // only rank 0 writes
  c.epoch_s = epoch_s, c.elapsed_s = elapsed_s;
  c.history = history;
  c.params = model_.params_to_host();
  const OptimizerState opt = local_.optimizer().state();
  for (const auto& [name, buf] : opt.buffers)
    c.buffers.push_back({"optimizer." + name, host_copy(*opt.device, buf)});
  if (opt.steps) c.counters.push_back({"optimizer.steps", {*opt.steps}});
  if (averager_.on()) {
    c.buffers.push_back({"outer.anchor", {averager_.anchor().begin(), averager_.anchor().end()}});
    std::span<float> m = averager_.momentum();
    if (!m.empty()) c.buffers.push_back({"outer.momentum", {m.begin(), m.end()}});
  }
  keeper_.save(c);
  return c;
}

void SyncTrainer::restore(const Checkpoint& c) {
  HPDL_REQUIRE(static_cast<int64_t>(c.params.size()) == model_.num_params(),
               "checkpoint parameter count does not match the model");
  model_.params_from_host(c.params);
  const OptimizerState opt = local_.optimizer().state();
  for (const auto& [name, buf] : opt.buffers) {
    const std::vector<float>* saved = c.buffer("optimizer." + name);
    if (!saved || saved->size() != buf.size())
      throw AgreedError("checkpoint has no optimizer state 'optimizer." + name +
                        "' of the model's size (was it written with other optimizer settings?)");
    opt.device->copy_from_host(buf.data(), saved->data(), buf.size_bytes());
  }
  if (opt.steps) {
    const std::vector<int64_t>* saved = c.counter("optimizer.steps");
    if (!saved || saved->size() != 1)
      throw AgreedError("checkpoint has no optimizer step count 'optimizer.steps'");
    *opt.steps = saved->front();
  }
  restore_own_state(c);
  keeper_.restore(c);
  global_step_ = c.global_step;
}

void SyncTrainer::restore_own_state(const Checkpoint& c) {
  // Each rank's own copy where the checkpoint has one (a checkpoint of a run without local
  // SGD or compression has none: the ranks start from the shared state, feedback zero).
  auto take = [&](const std::string& name, std::span<float> into, Device* device) {
    const std::vector<float>* saved = saved_rank_state(comm_, c, name);
    if (!saved) return;
    if (saved->size() != into.size())
      throw AgreedError("checkpoint state 'rank" + std::to_string(comm_.rank()) + "." + name +
                        "' is not of the model's size");
    if (device)
      device->copy_from_host(into.data(), saved->data(), into.size_bytes());
    else
      std::copy(saved->begin(), saved->end(), into.begin());
  };
  if (averager_.on()) {
    take("params", model_.params(), &model_.device());
    const OptimizerState opt = local_.optimizer().state();
    for (const auto& [name, buf] : opt.buffers) take("optimizer." + name, buf, opt.device);
    averager_.anchor_here();  // then the saved anchor and momentum, where there are any
    auto shared = [&](const std::string& name, std::span<float> into) {
      const std::vector<float>* saved = c.buffer(name);
      if (saved && saved->size() == into.size())
        std::copy(saved->begin(), saved->end(), into.begin());
    };
    shared("outer.anchor", averager_.anchor());
    shared("outer.momentum", averager_.momentum());
  }
  take("feedback", averager_.on() ? averager_.feedback() : reducer_.feedback(), nullptr);
}

}  // namespace hpdl
