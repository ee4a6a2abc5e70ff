// A validation split held out of the training rows by seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "hpdl/core/error.hpp"
#include "hpdl/data/dataset.hpp"

using namespace hpdl;

TEST(ValidationRows, DisjointCompleteAndChosenBySeed) {
  std::vector<int64_t> v, t, v2, t2, v3, t3;
  validation_rows(100, 0.2, 7, &v, &t);
  EXPECT_EQ(v.size(), 20u);
  EXPECT_EQ(t.size(), 80u);
  std::vector<int64_t> all = v;
  all.insert(all.end(), t.begin(), t.end());
  std::sort(all.begin(), all.end());
  for (int64_t i = 0; i < 100; ++i) ASSERT_EQ(all[i], i);  // disjoint and complete
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  validation_rows(100, 0.2, 7, &v2, &t2);
  EXPECT_EQ(v, v2);
  validation_rows(100, 0.2, 8, &v3, &t3);
  EXPECT_NE(v, v3);
  EXPECT_THROW(validation_rows(100, 0.001, 7, &v, &t), Error);  // no validation row
  EXPECT_THROW(validation_rows(1, 0.9, 7, &v, &t), Error);      // no training row
}
