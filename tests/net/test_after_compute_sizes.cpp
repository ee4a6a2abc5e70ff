// When the calibration's allreduce-after-compute curve stops (net/after_compute.hpp): by the
// last two sizes' time per byte, so that one small size that met a CPU budget's pause does
// not end it (a CI run measured 8 ms at 512 B on quarter-core hosts and stopped there).
#include <gtest/gtest.h>

#include "hpdl/net/after_compute.hpp"

namespace hpdl {
namespace {

TEST(AfterComputeSizes, TheFirstSizeAlwaysRuns) { EXPECT_TRUE(next_size_fits({}, 64, 12, 0.8)); }

TEST(AfterComputeSizes, OneSlowSmallSizeDoesNotEndTheCurve) {
  // 64 B in 0.2 ms, then 512 B in 8.2 ms (a whole pause): by the last alone 4 KiB would take
  // 12 x 8.2 ms x 8 = 0.79 s of 0.5; by 64 B's rate 0.15 s.
  const std::vector<Sample> s = {{64, 0.2e-3, 12}, {512, 8.2e-3, 12}};
  EXPECT_TRUE(next_size_fits(s, 4096, 12, 0.5));
}

TEST(AfterComputeSizes, TwoSlowSizesEndIt) {
  // 10 Mbit-like: 16 KiB in 20 ms and 128 KiB in 160 ms; 1 MiB would take 12 x 1.28 s.
  const std::vector<Sample> s = {{16384, 20e-3, 12}, {131072, 160e-3, 12}};
  EXPECT_FALSE(next_size_fits(s, 1048576, 12, 0.8));
  // With one sample only, its own rate decides.
  EXPECT_FALSE(next_size_fits({{131072, 160e-3, 12}}, 1048576, 12, 0.8));
  EXPECT_TRUE(next_size_fits({{131072, 1e-3, 12}}, 1048576, 12, 0.8));
}

}  // namespace
}  // namespace hpdl
