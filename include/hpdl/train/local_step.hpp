// One rank's training step on its own batch, the part the synchronous trainer and the
// parameter-server worker share: read the rows, forward, loss, backward (handing each
// finished layer to the caller, which may start communicating it); then, once the caller
// holds the final gradient, L2, the NaN/Inf guard and clipping; then the optimizer's update
// at the learning rate the schedule gives the step. What happens between (the gradient
// allreduce; the worker's pending push) stays with the caller.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/nn/loss.hpp"
#include "hpdl/nn/model.hpp"
#include "hpdl/optim/lr_schedule.hpp"
#include "hpdl/optim/optimizer.hpp"
#include "hpdl/train/finite_guard.hpp"
#include "hpdl/train/passes.hpp"
#include "hpdl/train/trainer_config.hpp"

namespace hpdl {

class LocalStep {
 public:
  // steps_per_epoch: this rank's, for the schedule. prof may be null.
  LocalStep(const TrainerConfig& cfg, const Comm& comm, Model& model, H5Split& train,
            Watchdog& watchdog, Profiler* prof, int64_t steps_per_epoch);

  // Forward and backward on `rows` at global step `step`, the loss scaled by loss_scale;
  // model.grads() then holds this rank's gradient. Returns the loss sum.
  // progress: Pass::progress, called inside long layers' backward.
  double gradients(std::span<const int64_t> rows, int64_t step, float loss_scale,
                   const std::function<void(size_t)>& on_layer_done = {},
                   std::span<const int64_t> next_rows = {}, std::function<void()> progress = {});

  // Whose gradient model.grads() holds when it is checked: the sum over ranks (the same on
  // every rank: the check is collective) or this rank's own.
  enum class Gradient { kReduced, kLocal };
  // L2 into the gradient, the guard, clipping. False: the step is skipped (guard().warning()
  // says why); train.nonfinite = "stop" throws instead.
  bool checked(Gradient kind, double local_loss, int64_t step, int64_t epoch);
  // The optimizer's update of model.params() at the scheduled rate for `step`.
  void update(int64_t step);

  // The scheduled learning rate of the update that follows `step` earlier ones.
  double lr(int64_t step) const { return schedule_.at(step); }
  Optimizer& optimizer() { return *optimizer_; }
  const FiniteGuard& guard() const { return guard_; }
  const StepNames& names() const { return names_; }

 private:
  const TrainerConfig& cfg_;
  Model& model_;
  H5Split& train_;
  Profiler* prof_;
  StepNames names_;
  SoftmaxCrossEntropy loss_;
  std::vector<int32_t> labels_;
  LrSchedule schedule_;
  const std::vector<Range> decayed_;  // where L2 applies
  std::unique_ptr<Optimizer> optimizer_;
  FiniteGuard guard_;
};

}  // namespace hpdl
