// hpdl predict's arithmetic on hand-made inputs: the straggler factor, the allreduce cost
// (analytic choice and interpolation of a measured curve), and one whole step.
#include <gtest/gtest.h>

#include "hpdl/predict/predictor.hpp"

using namespace hpdl;

TEST(Predict, ExpectedMaxOfNDraws) {
  EXPECT_DOUBLE_EQ(expected_max_factor({1, 1, 1, 1}, 8), 1.0);
  // {1, 3}, 2 draws: max is 3 unless both are 1 (1/4): E = 3 * 3/4 + 1/4 = 2.5; mean 2.
  EXPECT_DOUBLE_EQ(expected_max_factor({3, 1}, 2), 1.25);
  EXPECT_DOUBLE_EQ(expected_max_factor({3, 1}, 1), 1.0);
  EXPECT_GT(expected_max_factor({1, 2, 3}, 64), expected_max_factor({1, 2, 3}, 4));
}

namespace {
NetworkModel network() {
  NetworkModel n;
  n.inter_latency_s = n.intra_latency_s = 1e-4;
  n.inter_bandwidth_Bps = n.intra_bandwidth_Bps = 1e7;
  n.reduce_Bps = 1e9;
  return n;
}
}  // namespace

TEST(Predict, AllreduceTakesTheCheapestAlgorithmOrTheMeasuredCurve) {
  NetworkModel n = network();
  // 1 MB on 4 ranks: recursive doubling 2 (a + Sb + Sg) = 0.2022, ring 6a + 1.5 Sb + 0.75 Sg
  // = 0.15135, Rabenseifner 4a + 1.5 Sb + 0.75 Sg = 0.15115.
  const AllreduceCost c = allreduce_cost(n, 1000000, 4, 1);
  EXPECT_EQ(c.how, "rabenseifner");
  EXPECT_NEAR(c.seconds, 0.15115, 1e-9);
  EXPECT_EQ(c.rounds, 4);
  EXPECT_EQ(allreduce_cost(n, 1000000, 1, 1).seconds, 0);
  // Measured at 2 ranks: 1 KiB in 1 ms, 8 KiB in 8 ms; 4 KiB interpolates log-log: 4 ms.
  n.measured.push_back({2, {{1024, 1e-3}, {8192, 8e-3}}});
  const AllreduceCost m = allreduce_cost(n, 4096, 2, 1);
  EXPECT_EQ(m.how, "measured");
  EXPECT_NEAR(m.seconds, 4e-3, 1e-12);
  // Beyond the largest measured size: the last segment's rate, 1e-3 s per 7168 bytes.
  const AllreduceCost x = allreduce_cost(n, 8192 + 7168, 2, 1);
  EXPECT_EQ(x.how, "measured, extrapolated");
  EXPECT_NEAR(x.seconds, 8e-3 + 7e-3, 1e-12);
  EXPECT_NE(allreduce_cost(n, 512, 2, 1).how, "measured");  // below the measured sizes
}

TEST(Predict, OneStepAtTwoRanks) {
  StepProfile p;
  p.name = "hand-made";
  p.global_batch = p.local_batch = 64;
  p.layers = {"a", "b"};
  p.forward_s = {0.01, 0.02};
  p.backward_s = {0.02, 0.04};
  p.data_s = p.loss_s = 0.001;
  p.update_s = 0.002;
  p.compute_s = {0.1, 0.1};
  p.bucket_bytes = {400000, 400000};  // layer b's, then layer a's
  p.bucket_last_layer = {1, 0};
  const Prediction r = predict_step(p, network(), 2, {});
  // Half the batch per rank: (0.001 + 0.03 + 0.001 + 0.06) / 2 + 0.002 (update) = 0.048.
  EXPECT_NEAR(r.compute_s, 0.048, 1e-12);
  // Each bucket: ring on 2 ranks, 2a + Sb + S g / 2 = 0.0404, in 2 rounds.
  ASSERT_EQ(r.buckets.size(), 2u);
  EXPECT_NEAR(r.buckets[0].seconds, 0.0404, 1e-12);
  EXPECT_NEAR(r.comm_s, 0.0808, 1e-12);
  // Bucket 0 is complete after layer b's backward; one test (after layer a, 0.01 s of
  // backward left) can advance one of its 2 rounds (0.0202 s): 0.01 s is hidden.
  EXPECT_NEAR(r.hidden_s, 0.01, 1e-12);
  EXPECT_NEAR(r.exposed_s, 0.0708, 1e-12);
  EXPECT_NEAR(r.step_s, 0.1188, 1e-12);
  EXPECT_NEAR(r.samples_per_s, 64 / 0.1188, 1e-9);
  EXPECT_NE(r.bottleneck.find("allreduce"), std::string::npos);
  // One rank: no communication, the whole batch.
  const Prediction one = predict_step(p, network(), 1, {});
  EXPECT_NEAR(one.step_s, 0.094, 1e-12);
  EXPECT_EQ(one.comm_s, 0);
  // Four ranks per host on 2 cores: compute doubles.
  PredictOptions shared;
  shared.ranks_per_host = 4, shared.cores_per_host = 2;
  const Prediction sh = predict_step(p, network(), 4, shared);
  EXPECT_TRUE(sh.oversubscribed);
  EXPECT_NEAR(sh.compute_s, ((0.092 / 4) + 0.002) * 2, 1e-12);
}
