// When the calibration's allreduce-after-compute curve stops (net/after_compute.hpp): never
// up to 4 KiB, beyond by the last two sizes' time per byte, so that one size that met a CPU
// budget's pause does not end it (CI runs measured 8 ms at 64 or 512 B on quarter-core hosts
// and stopped there).
#include <gtest/gtest.h>

#include "hpdl/net/after_compute.hpp"

namespace hpdl {
namespace {

TEST(AfterComputeSizes, SizesUpTo4KiBAlwaysRun) {
  EXPECT_TRUE(next_size_fits({}, 64, 12, 0.8));
  // 64 B met a whole pause (8.5 ms): by its time per byte 512 B would take 0.82 s.
  EXPECT_TRUE(next_size_fits({{64, 8.5e-3, 12}}, 512, 12, 0.8));
  EXPECT_TRUE(next_size_fits({{64, 8.5e-3, 12}, {512, 8.5e-3, 12}}, 4096, 12, 0.8));
}

TEST(AfterComputeSizes, OneSlowSizeDoesNotEndTheCurve) {
  // 4 KiB in 0.5 ms, then 32 KiB in 30 ms (a whole pause): by the last alone 256 KiB would
  // take 12 x 30 ms x 8 = 2.9 s of 0.8; by 4 KiB's rate 0.38 s.
  const std::vector<Sample> s = {{4096, 0.5e-3, 12}, {32768, 30e-3, 12}};
  EXPECT_TRUE(next_size_fits(s, 262144, 12, 0.8));
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
