// The sizes calibrate's iallreduce curve walks (src/net/measure_loop.hpp): powers of two, and
// one just below each from 1 KiB, so that a change of protocol at a power of two is a step
// between two near sizes rather than a slope over the octave before it.
#include <gtest/gtest.h>

#include "measure_loop.hpp"

namespace hpdl {
namespace {

TEST(CalibrationSizes, OneJustBelowEachPowerOfTwoFromTheFirst) {
  const std::vector<int64_t> s = sizes_below_powers(sizes_up_to(256, 4096, 2), 1024);
  EXPECT_EQ(s, (std::vector<int64_t>{256, 512, 992, 1024, 1984, 2048, 3968, 4096}));
}

TEST(CalibrationSizes, ALargestThatIsNoPowerOfTwoGetsNone) {
  // sizes_up_to ends on max_bytes where the series falls short of it.
  const std::vector<int64_t> s = sizes_below_powers(sizes_up_to(1024, 3072, 2), 1024);
  EXPECT_EQ(s, (std::vector<int64_t>{992, 1024, 1984, 2048, 3072}));
  for (int64_t b : s) EXPECT_EQ(b % 4, 0) << b;  // whole floats
}

}  // namespace
}  // namespace hpdl
