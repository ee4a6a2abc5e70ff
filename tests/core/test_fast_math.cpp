// The fast exp, sigmoid and tanh against libm.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hpdl/core/fast_math.hpp"

using namespace hpdl;

TEST(FastMath, ExpSigmoidTanhMatchLibm) {
  double exp_err = 0, sig_err = 0, tanh_err = 0;
  for (float x = -80.0f; x <= 80.0f; x += 0.00731f) {
    exp_err = std::max(exp_err, std::abs(double(fast_exp(x)) / std::exp(double(x)) - 1));
    sig_err = std::max(sig_err, std::abs(double(fast_sigmoid(x)) - 1 / (1 + std::exp(-double(x)))));
    tanh_err = std::max(tanh_err, std::abs(double(fast_tanh(x)) - std::tanh(double(x))));
  }
  EXPECT_LT(exp_err, 5e-7);
  EXPECT_LT(sig_err, 2e-7);
  EXPECT_LT(tanh_err, 5e-7);
  EXPECT_LT(fast_sigmoid(-1000.0f), 1e-30f);  // clamped: tiny, finite, not NaN
  EXPECT_FLOAT_EQ(fast_sigmoid(1000.0f), 1.0f);
  EXPECT_FLOAT_EQ(fast_tanh(1000.0f), 1.0f);
  // The clamp is a bitwise select: infinities clamp like large values, a NaN stays NaN.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_FLOAT_EQ(fast_sigmoid(inf), 1.0f);
  EXPECT_LT(fast_sigmoid(-inf), 1e-30f);
  EXPECT_FLOAT_EQ(fast_tanh(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(fast_exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(fast_sigmoid(std::numeric_limits<float>::quiet_NaN())));
}
