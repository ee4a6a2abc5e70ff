// The learning rate in force at a step: a pure function of the steps already taken, so
// every rank (sync) computes the same value, a parameter-server worker follows its own
// step count, and a resumed run continues the schedule exactly (the checkpoint holds the
// step count). Schedules:
//   constant      lr
//   step          lr * decay_factor ^ floor(epoch / decay_epochs)     changes per epoch
//   exponential   lr * decay_factor ^ epoch                           changes per epoch
//   cosine        min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2      changes per step,
//                 p = progress from the end of warm-up to the last step
// where epoch = steps taken / steps per epoch (0 in the first epoch). A linear warm-up of
// warmup_steps multiplies any of them by (step + 1) / warmup_steps until it reaches 1.
#pragma once
#include <cstdint>

#include "hpdl/config/settings.hpp"

namespace hpdl {

class LrSchedule {
 public:
  // Over train.epochs epochs of steps_per_epoch steps (or train.max_steps, if fewer):
  // cosine reaches min_lr there.
  LrSchedule(const OptimizerConfig& cfg, const TrainConfig& train, int64_t steps_per_epoch);
  // The learning rate of the update that follows `steps_taken` earlier updates.
  double at(int64_t steps_taken) const;
  bool constant() const { return constant_; }
  int64_t steps_per_epoch() const { return steps_per_epoch_; }

 private:
  OptimizerConfig cfg_;
  int64_t steps_per_epoch_, total_steps_;
  bool constant_;
};

}  // namespace hpdl
