// calibrate's CPU share kept from two measurements (src/net/cpu_share.hpp): the one whose
// ranks' shares sum to more, and a line only where one sum fell over 10 % below the other.
#include <gtest/gtest.h>

#include "cpu_share.hpp"
#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {

CpuShares shares(std::vector<double> share, std::vector<double> slice) {
  CpuShares c;
  c.share = std::move(share), c.slice_s = std::move(slice);
  return c;
}

TEST(CpuShare, KeepsTheMeasurementWhoseSharesSumToMore) {
  CpuShares first = shares({0.41, 0.42, 0.42}, {0.003, 0.003, 0.003});
  const CpuShares second = shares({0.49, 0.47, 0.50}, {0.004, 0.002, 0.004});
  const std::string line = keep_larger_shares(first, second);
  EXPECT_EQ(first.share, second.share);
  EXPECT_EQ(first.slice_s, second.slice_s);
  // 1.25 against 1.46 cores: named with both sums, in the order taken.
  EXPECT_NE(line.find("summed to 1.250, then 1.460 cores"), std::string::npos) << line;
}

TEST(CpuShare, RanksSharingCoresMoveWithoutAWarning) {
  // Four ranks on two cores: one measurement favours rank 3, the next rank 0; the total holds,
  // and neither rank's larger share is taken (their sum would be more than the cores).
  CpuShares first = shares({0.50, 0.50, 0.50, 0.50}, {0, 0, 0, 0});
  const CpuShares second = shares({0.44, 0.50, 0.48, 0.577}, {0, 0, 0, 0});
  EXPECT_EQ(keep_larger_shares(first, second), "");
  EXPECT_EQ(first.share, (std::vector<double>{0.50, 0.50, 0.50, 0.50}));
}

TEST(CpuShare, MeasurementsOfDifferentRankCountsAreRefused) {
  CpuShares first = shares({0.5, 0.5}, {0, 0});
  EXPECT_THROW(keep_larger_shares(first, shares({0.5}, {0})), Error);
}

}  // namespace
}  // namespace hpdl
