// Local SGD's average on ranks whose CPU pauses: `hpdl predict` costs it with the calibrated
// allreduce after bursts of compute (net/after_compute.hpp), on hand-made inputs.
#include <gtest/gtest.h>

#include "hpdl/predict/comm_cost.hpp"
#include "hpdl/predict/predictor.hpp"

namespace hpdl {
namespace {

// 2 ranks: back to back 1 ms at 64 B and 5 ms at 1 MiB; after bursts of 8 ms of compute 9
// and 25 ms (8 and 20 ms more).
NetworkModel budgeted() {
  NetworkModel n;
  n.inter_latency_s = n.intra_latency_s = 1e-4;
  n.inter_bandwidth_Bps = n.intra_bandwidth_Bps = 1e7;
  n.reduce_Bps = 1e9;
  n.cpu_slice_s = 0.004;
  n.measured = {{2, {{64, 1e-3}, {1048576, 5e-3}}}};
  n.after_compute = {{2, {{64, 9e-3}, {1048576, 25e-3}}}};
  n.after_compute_cpu_s = 0.008;
  return n;
}

TEST(AfterCompute, ExcessInProportionToTheComputeUpToTheBursts) {
  const NetworkModel n = budgeted();
  EXPECT_NEAR(after_compute_excess_s(n, 64, 2, 1, 0.008), 8e-3, 1e-12);
  EXPECT_NEAR(after_compute_excess_s(n, 64, 2, 1, 0.004), 4e-3, 1e-12);  // half the bursts
  EXPECT_NEAR(after_compute_excess_s(n, 64, 2, 1, 0.080), 8e-3, 1e-12);  // no more past them
  EXPECT_NEAR(after_compute_excess_s(n, 1048576, 2, 1, 0.008), 20e-3, 1e-12);
  // Outside the curve: its nearest size's excess.
  EXPECT_NEAR(after_compute_excess_s(n, 8, 2, 1, 0.008), 8e-3, 1e-12);
  EXPECT_NEAR(after_compute_excess_s(n, 4 << 20, 2, 1, 0.008), 20e-3, 1e-12);
  // Between sizes: both curves log-log, the excess their difference.
  const double mid = after_compute_excess_s(n, 8192, 2, 1, 0.008);
  EXPECT_GT(mid, 8e-3);
  EXPECT_LT(mid, 20e-3);
  // No curve for 4 ranks, no bursts recorded, one rank, no compute: nothing.
  EXPECT_EQ(after_compute_excess_s(n, 64, 4, 1, 0.008), 0);
  EXPECT_EQ(after_compute_excess_s(n, 64, 1, 1, 0.008), 0);
  EXPECT_EQ(after_compute_excess_s(n, 64, 2, 1, 0), 0);
  NetworkModel none = n;
  none.after_compute_cpu_s = 0;
  EXPECT_EQ(after_compute_excess_s(none, 64, 2, 1, 0.008), 0);
  // A curve faster than back to back (noise) adds nothing.
  NetworkModel faster = n;
  faster.after_compute = {{2, {{64, 0.5e-3}, {1048576, 4e-3}}}};
  EXPECT_EQ(after_compute_excess_s(faster, 64, 2, 1, 0.008), 0);
}

StepProfile local_sgd_profile() {
  StepProfile p;
  p.name = "hand-made";
  p.global_batch = p.local_batch = 64;
  p.layers = {"a"};
  p.forward_s = {0.0002};
  p.backward_s = {0.0004};
  p.compute_s = {0.0006, 0.0006};
  p.param_bytes = 262144;
  p.sync_every = 16;
  p.train_samples = 6400;
  return p;
}

// Half the batch a rank on a quarter core: 1.2 ms a step, 0.3 ms of CPU; 16 steps hold 4.8
// of the calibration's 8 ms bursts. There the average costs the curve's excess in that proportion,
// once every 16 steps, in place of the last rank's pause (which the curve holds); on a whole core,
// and at the range's fast end, what back-to-back allreduces cost.
TEST(AfterCompute, LocalSgdAverageOnABudget) {
  const StepProfile p = local_sgd_profile();
  NetworkModel without = budgeted();
  without.after_compute.clear();
  PredictOptions quarter;
  quarter.cores_per_host = 0.25;
  const Prediction a = predict_step(p, without, 2, quarter);
  const Prediction b = predict_step(p, budgeted(), 2, quarter);
  const double excess = after_compute_excess_s(budgeted(), 262144, 2, 1, 16 * 0.0012 * 0.25);
  EXPECT_NEAR(excess, 0.6 * after_compute_excess_s(budgeted(), 262144, 2, 1, 1), 1e-12);
  EXPECT_EQ(b.budget_wait_s, 0);
  EXPECT_NEAR(b.compute_s, 0.0012, 1e-12);
  EXPECT_GT(a.budget_wait_s, 0);
  EXPECT_NEAR(a.compute_s, 0.0012 + a.budget_wait_s, 1e-12);
  EXPECT_NEAR(b.comm_s, a.comm_s + excess / 16, 1e-12);
  EXPECT_NEAR(b.step_s, 0.0012 + a.comm_s + excess / 16, 1e-12);
  // A whole core: the curve is not read.
  EXPECT_EQ(predict_step(p, budgeted(), 2, {}).step_s, predict_step(p, without, 2, {}).step_s);
  // Synchronous steps keep their model.
  StepProfile sync = p;
  sync.sync_every = 1;
  sync.bucket_bytes = {262144};
  sync.bucket_last_layer = {0};
  EXPECT_EQ(predict_step(sync, budgeted(), 2, quarter).step_s,
            predict_step(sync, without, 2, quarter).step_s);
  // The range: its fast end without the excess, its slow end with it.
  const Prediction band = predict_with_band(p, budgeted(), 2, quarter);
  EXPECT_EQ(band.step_s_low, predict_with_band(p, without, 2, quarter).step_s_low);
  EXPECT_GT(band.step_s_high, predict_with_band(p, without, 2, quarter).step_s_high);
}

// network.json carries the bursts' CPU seconds beside the curves; optional (older files), and
// refused outside 0 .. 10 s.
TEST(AfterCompute, NetworkJsonCarriesTheBursts) {
  Calibration c;
  c.hosts.host_of_rank = {"h0", "h1"};
  c.hosts.hosts = {"h0", "h1"};
  c.hosts.leader = {0, 1};
  c.pairs = {{0, 1, false, {{8, 1e-4, 10}, {1 << 20, 0.1, 3}}, {1e-4, 1.25e7}, false}};
  c.allreduce = {{-1, "iallreduce", 2, {{64, 1e-3, 30}}},
                 {-2, kAfterComputeCurve, 2, {{64, 9e-3, 12}, {512, 9.5e-3, 12}}}};
  c.reduce_Bps = {2e9, 2e9};
  c.after_compute_cpu_s = 0.008;
  const nlohmann::json j = c.to_json();
  EXPECT_EQ(Calibration::from_json(j, "net.json").to_json(), j);
  const NetworkModel n = network_model(Calibration::from_json(j, "net.json"), "net.json");
  EXPECT_DOUBLE_EQ(n.after_compute_cpu_s, 0.008);
  ASSERT_EQ(n.after_compute.size(), 1u);
  ASSERT_EQ(n.measured.size(), 1u);  // the back-to-back curve stays the buckets'
  EXPECT_DOUBLE_EQ(n.after_compute[0].samples[1].second, 9.5e-3);
  nlohmann::json older = j;
  older.erase("allreduce_after_compute_cpu_s");
  EXPECT_EQ(Calibration::from_json(older, "net.json").after_compute_cpu_s, 0);
  nlohmann::json bad = j;
  bad["allreduce_after_compute_cpu_s"] = -0.5;
  try {
    Calibration::from_json(bad, "net.json");
    ADD_FAILURE() << "a negative burst was read";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("allreduce_after_compute_cpu_s"), std::string::npos);
  }
}

}  // namespace
}  // namespace hpdl
