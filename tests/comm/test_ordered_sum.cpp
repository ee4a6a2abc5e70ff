// Part of hpdl_mpi_tests (mpirun -np 1, 2 and 4): Comm::ordered_sum of 4 and 8 shards equals,
// bit for bit on every rank and so on every rank count, the shards added one after another
// in shard order; with element counts that do not split evenly over the ranks, and fewer
// elements than ranks.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/core/rng.hpp"

using namespace hpdl;

namespace {

// Shard k's values: a wide range of magnitudes, so each order of addition rounds differently.
std::vector<float> shard_values(int k, int64_t n) {
  Rng rng(7, static_cast<uint64_t>(k));
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = (rng.uniform() - 0.5f) * (1.0f + 1000.0f * rng.uniform());
  return v;
}

TEST(OrderedSum, EqualsTheShardsAddedInOrderOnEveryRankCount) {
  const Comm world(MPI_COMM_WORLD);
  for (int shards : {4, 8}) {
    for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{1001}}) {
      const int per = shards / world.size();
      std::vector<float> mine;
      for (int j = 0; j < per; ++j) {
        const std::vector<float> v = shard_values(world.rank() * per + j, n);
        mine.insert(mine.end(), v.begin(), v.end());
      }
      std::vector<float> sum(static_cast<size_t>(n)), want = shard_values(0, n);
      for (int k = 1; k < shards; ++k) {
        const std::vector<float> v = shard_values(k, n);
        for (int64_t i = 0; i < n; ++i) want[i] += v[i];
      }
      world.ordered_sum(mine.data(), n, shards, sum.data());
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(sum[i], want[i]) << shards << " shards, n " << n << ", element " << i;
    }
  }
}

}  // namespace
