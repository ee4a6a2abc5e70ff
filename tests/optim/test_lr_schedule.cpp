// Learning-rate schedules: constant, step, exponential, cosine, linear warm-up.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "hpdl/optim/lr_schedule.hpp"

using namespace hpdl;

namespace {
OptimizerConfig schedule(const std::string& name, double lr = 1.0) {
  OptimizerConfig o;
  o.schedule = parse_word<Schedule>(name, "optimizer.schedule");
  o.lr = lr;
  return o;
}
TrainConfig epochs(int64_t n) {
  TrainConfig t;
  t.epochs = n;
  return t;
}
}  // namespace

TEST(LrSchedule, ConstantIsTheConfiguredRate) {
  const LrSchedule s(schedule("constant", 0.01), epochs(3), 10);
  for (int64_t t : {0, 9, 10, 29}) EXPECT_EQ(s.at(t), 0.01);
}

TEST(LrSchedule, StepDecaysEveryNEpochs) {
  OptimizerConfig o = schedule("step");
  o.decay_epochs = 2, o.decay_factor = 0.5;
  const LrSchedule s(o, epochs(10), 10);  // 10 steps an epoch
  EXPECT_DOUBLE_EQ(s.at(0), 1.0);
  EXPECT_DOUBLE_EQ(s.at(19), 1.0);  // last step of epoch 2
  EXPECT_DOUBLE_EQ(s.at(20), 0.5);  // first of epoch 3
  EXPECT_DOUBLE_EQ(s.at(39), 0.5);
  EXPECT_DOUBLE_EQ(s.at(40), 0.25);
}

TEST(LrSchedule, ExponentialDecaysEveryEpoch) {
  OptimizerConfig o = schedule("exponential");
  o.decay_factor = 0.9;
  const LrSchedule s(o, epochs(10), 10);
  EXPECT_DOUBLE_EQ(s.at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10), 0.9);
  EXPECT_DOUBLE_EQ(s.at(25), 0.9 * 0.9);
}

TEST(LrSchedule, CosineFromLrToTheFloorOverTraining) {
  OptimizerConfig o = schedule("cosine");
  o.min_lr = 0.1;
  const LrSchedule s(o, epochs(10), 10);  // 100 steps
  EXPECT_DOUBLE_EQ(s.at(0), 1.0);
  EXPECT_NEAR(s.at(50), 0.55, 1e-12);
  EXPECT_NEAR(s.at(99), 0.1 + 0.45 * (1 + std::cos(M_PI * 0.99)), 1e-12);
  EXPECT_GT(s.at(99), 0.1);
  // train.max_steps ends training (and the cosine) earlier.
  TrainConfig t = epochs(10);
  t.max_steps = 20;
  EXPECT_NEAR(LrSchedule(o, t, 10).at(10), 0.55, 1e-12);
}

TEST(LrSchedule, LinearWarmUpInFrontOfAnySchedule) {
  OptimizerConfig o = schedule("constant", 0.2);
  o.warmup_steps = 4;
  const LrSchedule c(o, epochs(2), 10);
  EXPECT_DOUBLE_EQ(c.at(0), 0.05);
  EXPECT_DOUBLE_EQ(c.at(2), 0.15);
  EXPECT_DOUBLE_EQ(c.at(3), 0.2);
  EXPECT_DOUBLE_EQ(c.at(4), 0.2);
  o.schedule = Schedule::kCosine;  // the cosine starts where warm-up ends
  const LrSchedule w(o, epochs(2), 10);
  EXPECT_DOUBLE_EQ(w.at(3), 0.2);
  EXPECT_DOUBLE_EQ(w.at(4), 0.2);
  EXPECT_LT(w.at(5), 0.2);
}
