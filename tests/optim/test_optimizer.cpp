// The optimizers' math on the flat buffers: SGD with momentum, Adam, L2, clipping.
#include <gtest/gtest.h>

#include <cmath>

#include "hpdl/optim/optimizer.hpp"
#include "staged_device.hpp"

using namespace hpdl;

TEST(Optim, SgdMomentum) {
  std::vector<float> w = {1.0f, 2.0f}, g = {0.5f, -1.0f};
  auto ops = make_cpu_vector_ops();
  Sgd sgd(*ops, host_device(), 2, 0.1f, 0.9f);
  sgd.update(w, g);
  EXPECT_FLOAT_EQ(w[0], 1.0f - 0.05f);
  sgd.update(w, g);  // v = 0.9*0.5 + 0.5 = 0.95
  EXPECT_FLOAT_EQ(w[0], 0.95f - 0.095f);
}

TEST(Optim, AdamFirstStepIsLrTimesSign) {
  std::vector<float> w = {1.0f, 1.0f}, g = {0.3f, -2.0f};
  auto ops = make_cpu_vector_ops();
  Adam adam(*ops, host_device(), 2, 0.01f, 0.9f, 0.999f, 1e-8f);
  adam.update(w, g);
  EXPECT_NEAR(w[0], 0.99f, 1e-6);
  EXPECT_NEAR(w[1], 1.01f, 1e-6);
}

// The state lives where the backend's operations run (a GPU's memory on the cuda
// backend), and checkpoints reach it through that device's host copies.
TEST(Optim, StateLivesOnTheBackendsDevice) {
  auto ops = make_reference_vector_ops();
  StagedDevice device(0);
  OptimizerConfig cfg;
  cfg.name = OptimizerKind::kAdam;
  auto adam = make_optimizer(*ops, device, cfg, 10);
  EXPECT_EQ(device.allocated, 2 * 10 * sizeof(float));  // m and v
  const OptimizerState s = adam->state();
  EXPECT_EQ(s.device, &device);
  ASSERT_EQ(s.buffers.size(), 2u);
  cfg.name = OptimizerKind::kSgd, cfg.momentum = 0.9;
  EXPECT_EQ(make_optimizer(*ops, device, cfg, 10)->state().device, &device);
  EXPECT_EQ(device.allocated, 3 * 10 * sizeof(float));  // + the velocity
}

TEST(Optim, L2OnlyOnDecayedRangesAndClipByGlobalNorm) {
  const std::vector<Range> decayed = {{0, 2}};  // l.w decays; l.b at offset 2 does not
  std::vector<float> w = {1, 2, 3}, g = {0, 0, 0};
  auto ops = make_cpu_vector_ops();
  add_l2_sum_squares(*ops, decayed, w, g, 0.5f);
  EXPECT_EQ(g, (std::vector<float>{0.5f, 1.0f, 0.0f}));
  std::vector<float> big = {3, 4};
  EXPECT_NEAR(clip_by_global_norm(*ops, big, 1.0), 5.0, 1e-9);
  EXPECT_NEAR(std::hypot(big[0], big[1]), 1.0, 1e-6);
  std::vector<float> small = {0.3f, 0.4f};
  clip_by_global_norm(*ops, small, 1.0);
  EXPECT_FLOAT_EQ(small[0], 0.3f);
}
