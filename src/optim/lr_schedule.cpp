// Learning-rate schedules (see the header for the formulas).
#include "hpdl/optim/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace hpdl {

namespace {
int64_t last_step(const TrainConfig& t, int64_t steps_per_epoch) {
  const int64_t all = t.epochs * steps_per_epoch;
  return std::max<int64_t>(t.max_steps > 0 ? std::min(all, t.max_steps) : all, 1);
}
}  // namespace

LrSchedule::LrSchedule(const OptimizerConfig& cfg, const TrainConfig& train,
                       int64_t steps_per_epoch)
    : cfg_(cfg),
      steps_per_epoch_(std::max<int64_t>(steps_per_epoch, 1)),
      total_steps_(last_step(train, steps_per_epoch_)),
      constant_(cfg.schedule == Schedule::kConstant && cfg.warmup_steps == 0) {}

double LrSchedule::at(int64_t steps_taken) const {
  if (constant_) return cfg_.lr;
  const int64_t epoch = steps_taken / steps_per_epoch_;
  double lr = cfg_.lr;
  if (cfg_.schedule == Schedule::kStep) {
    lr *= std::pow(cfg_.decay_factor, static_cast<double>(epoch / cfg_.decay_epochs));
  } else if (cfg_.schedule == Schedule::kExponential) {
    lr *= std::pow(cfg_.decay_factor, static_cast<double>(epoch));
  } else if (cfg_.schedule == Schedule::kCosine) {
    const int64_t span = std::max<int64_t>(total_steps_ - cfg_.warmup_steps, 1);
    const double p =
        std::clamp(static_cast<double>(steps_taken - cfg_.warmup_steps) / span, 0.0, 1.0);
    lr = cfg_.min_lr + (cfg_.lr - cfg_.min_lr) * 0.5 * (1 + std::cos(std::numbers::pi * p));
  }
  if (steps_taken < cfg_.warmup_steps)
    lr *= static_cast<double>(steps_taken + 1) / static_cast<double>(cfg_.warmup_steps);
  return lr;
}

}  // namespace hpdl
