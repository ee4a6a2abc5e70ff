// Part of hpdl_mpi_tests (mpirun -np 1, 2 and 4 on one box): the sum through a shared-memory
// window (NodeSum) and the gradient reducer's use of it. The sums must equal, bit for bit on
// every rank, the ranks' values added in rank order; in chunks far smaller than the vector
// (both halves of the window, a short last chunk, slices empty when a chunk is small), and
// again on the next call.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/node_sum.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/core/buffer.hpp"
#include "hpdl/core/half.hpp"
#include "hpdl/core/rng.hpp"
#include "hpdl/dist/grad_reducer.hpp"
#include "staged_device.hpp"

using namespace hpdl;

namespace {

// Values that round differently in each order of addition (wide range of magnitudes).
std::vector<float> rank_values(int rank, int64_t n, uint64_t call) {
  Rng rng(call, static_cast<uint64_t>(rank));
  std::vector<float> v(n);
  for (auto& x : v) x = (rng.uniform() - 0.5f) * (1.0f + 1000.0f * rng.uniform());
  return v;
}

// What NodeSum must give: every rank's values added in rank order, in f32.
std::vector<float> in_rank_order(const Comm& world, int64_t n, uint64_t call) {
  std::vector<float> sum = rank_values(0, n, call);
  for (int r = 1; r < world.size(); ++r) {
    const std::vector<float> v = rank_values(r, n, call);
    for (int64_t i = 0; i < n; ++i) sum[i] += v[i];
  }
  return sum;
}

TEST(NodeSum, OpensForSeveralRanksOfOneNodeOnly) {
  Comm world(MPI_COMM_WORLD), self(MPI_COMM_SELF);
  EXPECT_EQ(NodeSum::open(self, 64), nullptr);
  const auto sum = NodeSum::open(world, 64);
  EXPECT_EQ(sum != nullptr, world.size() > 1);  // the tests' ranks share one box
  if (sum) EXPECT_EQ(sum->chunk_floats(), std::max(64, 16 * world.size()));
  // A chunk smaller than a cache line per rank grows to one.
  const auto tiny = NodeSum::open(world, 1);
  if (tiny) EXPECT_EQ(tiny->chunk_floats(), 16 * world.size());
}

TEST(NodeSum, AddsInRankOrderTheSameBitsOnEveryRank) {
  Comm world(MPI_COMM_WORLD);
  Watchdog watchdog(60, world.rank());
  world.bound_waits_by(&watchdog);
  WatchdogScope guard(watchdog, "node sum test", 0);
  const auto sum = NodeSum::open(world, 80);  // 80 floats: several chunks for most sizes
  if (!sum) GTEST_SKIP() << "one rank: nothing to sum";
  uint64_t call = 0;
  for (const int64_t n : {0, 1, 15, 17, 80, 81, 100, 159, 1000, 5003}) {
    for (int repeat = 0; repeat < 2; ++repeat, ++call) {
      std::vector<float> data = rank_values(world.rank(), n, call);
      sum->sum(data.data(), n);
      EXPECT_EQ(data, in_rank_order(world, n, call)) << "n " << n << " rank " << world.rank();
    }
  }
  world.bound_waits_by(nullptr);
}

// The reducer on a device the host cannot read: sums through shared memory once every
// bucket's download has landed (the staged device delivers them late), and puts them back;
// through MPI when told not to or when buckets travel in 16 bits.
TEST(GradientReducer, SumsThroughSharedMemoryOnOneNode) {
  Comm world(MPI_COMM_WORLD);
  Watchdog watchdog(60, world.rank());
  const std::vector<Range> layers = {{0, 40}, {40, 0}, {40, 24}, {64, 36}};  // layer 1: none
  for (const bool shared : {true, false}) {
    StagedDevice device(/*lag=*/3);
    Buffer grads(100, device);
    const std::vector<float> mine = rank_values(world.rank(), 100, 7);
    device.copy_from_host(grads.data(), mine.data(), sizeof(float) * 100);
    GradientReducer reducer(world, device, grads.span(), layers, 30, watchdog, std::nullopt,
                            shared);
    EXPECT_EQ(reducer.sums_on_node(), shared && world.size() > 1);
    for (size_t layer = layers.size(); layer-- > 0;) reducer.layer_done(layer);
    reducer.finish(0);
    std::vector<float> sum(100);
    device.copy_to_host(sum.data(), grads.data(), sizeof(float) * 100);
    if (shared) {
      EXPECT_EQ(sum, in_rank_order(world, 100, 7));
    } else {
      const std::vector<float> expected = in_rank_order(world, 100, 7);
      for (int i = 0; i < 100; ++i) EXPECT_NEAR(sum[i], expected[i], 1e-3f) << i;
    }
  }
  Buffer grads(100, host_device());
  GradientReducer compressed(world, host_device(), grads.span(), layers, 30, watchdog,
                             HalfFormat::kBf16);
  EXPECT_FALSE(compressed.sums_on_node());
}

}  // namespace
