// hpdl predict's arithmetic on hand-made inputs: the straggler factor, the allreduce cost
// (analytic choice and interpolation of a measured curve), and one whole step.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "hpdl/predict/closed_network.hpp"
#include "hpdl/predict/predictor.hpp"
#include "hpdl/predict/recommend.hpp"

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
// One Downpour server and its workers: 4 kB of parameters, pulled and pushed every step,
// 0.01 s of compute a step.
StepProfile downpour_profile() {
  StepProfile ps;
  ps.mode = DistMode::kDownpour;
  ps.servers = 1, ps.n_fetch = 1, ps.n_push = 1;
  ps.param_bytes = 4000;
  ps.global_batch = ps.local_batch = 32;
  ps.worker_compute_s = 0.010;
  return ps;
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
  // A size just below the largest (calibrate's, below a power of two) may sit across a change
  // of protocol from it: the rate beyond comes from the largest size at most half the last.
  n.measured.back().samples.insert(n.measured.back().samples.begin() + 1, {7936, 5e-3});
  EXPECT_NEAR(allreduce_cost(n, 8192 + 7168, 2, 1).seconds, 8e-3 + 7e-3, 1e-12);
  EXPECT_NEAR(allreduce_cost(n, 7936, 2, 1).seconds, 5e-3, 1e-12);
  // No size at most half the largest: nothing to extrapolate by.
  n.measured.back().samples = {{6144, 7e-3}, {8192, 8e-3}};
  EXPECT_NE(allreduce_cost(n, 16384, 2, 1).how, "measured, extrapolated");
}

namespace {
// A hand-made profile: two layers, 800 kB of gradients in two buckets (layer b's, then
// layer a's), 6400 training samples.
StepProfile two_layer_profile() {
  StepProfile p;
  p.name = "hand-made";
  p.global_batch = p.local_batch = 64;
  p.layers = {"a", "b"};
  p.forward_s = {0.01, 0.02};
  p.backward_s = {0.02, 0.04};
  p.data_s = p.loss_s = 0.001;
  p.update_s = 0.002;
  p.compute_s = {0.1, 0.1};
  p.bucket_bytes = {400000, 400000};
  p.bucket_last_layer = {1, 0};
  p.param_bytes = 800000;
  p.train_samples = 6400;
  return p;
}
}  // namespace

TEST(Predict, OneStepAtTwoRanks) {
  const StepProfile p = two_layer_profile();
  const Prediction r = predict_step(p, network(), 2, {});
  // Half the batch per rank: (0.001 + 0.03 + 0.001 + 0.06) / 2 + 0.002 (update) = 0.048.
  EXPECT_NEAR(r.compute_s, 0.048, 1e-12);
  // Bucket 0: ring on 2 ranks, 2a + Sb + S g / 2 = 0.0404, in 2 rounds, from 0.02 s into
  // backward (layer b's) to 0.0604. Bucket 1 starts at 0.03, while bucket 0 is in flight:
  // the two are one allreduce of 800 kB (0.0806), bucket 1 adds 0.0402.
  ASSERT_EQ(r.buckets.size(), 2u);
  EXPECT_NEAR(r.buckets[0].seconds, 0.0404, 1e-12);
  EXPECT_NEAR(r.buckets[1].seconds, 0.0402, 1e-12);
  EXPECT_NEAR(r.comm_s, 0.0806, 1e-12);
  // Bucket 0 is complete after layer b's backward; one test (after layer a, 0.01 s of
  // backward left) can advance one of its 2 rounds (0.0202 s): 0.01 s is hidden.
  EXPECT_NEAR(r.hidden_s, 0.01, 1e-12);
  EXPECT_NEAR(r.exposed_s, 0.0706, 1e-12);
  EXPECT_NEAR(r.step_s, 0.1186, 1e-12);
  EXPECT_NEAR(r.samples_per_s, 64 / 0.1186, 1e-9);
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

// A bucket that starts after the earlier ones have completed costs its own allreduce; one
// that starts while they are in flight, what it adds to theirs (measured curve: 1 ms for
// 100 kB, 1.5 ms for 200 kB: two buckets of 100 kB together 1.5 ms, not 2).
TEST(Predict, BucketsInFlightTogetherShareOneAllreduce) {
  StepProfile p = two_layer_profile();
  p.bucket_bytes = {100000, 100000};
  NetworkModel n = network();
  n.measured.push_back({2, {{50000, 0.6e-3}, {100000, 1e-3}, {200000, 1.5e-3}}});
  // Bucket 0 from 0.02 s into backward to 0.021; bucket 1 at 0.03: after it, on its own.
  Prediction r = predict_step(p, n, 2, {});
  EXPECT_NEAR(r.buckets[1].seconds, 1e-3, 1e-12);
  EXPECT_NEAR(r.comm_s, 2e-3, 1e-12);
  // Layer a's backward 0.0004 s (at half the batch 0.0002): bucket 1 starts in bucket 0's.
  p.backward_s = {0.0004, 0.04};
  r = predict_step(p, n, 2, {});
  EXPECT_NEAR(r.buckets[0].seconds, 1e-3, 1e-12);
  EXPECT_NEAR(r.buckets[1].seconds, 0.5e-3, 1e-12);
  EXPECT_NEAR(r.comm_s, 1.5e-3, 1e-12);
  // A curve that rises faster than the bytes (a tc burst used up): never more than its own.
  n.measured.back().samples = {{50000, 0.6e-3}, {100000, 1e-3}, {200000, 4e-3}};
  EXPECT_NEAR(predict_step(p, n, 2, {}).buckets[1].seconds, 1e-3, 1e-12);
}

// Ranks that all share one host sum f32 gradients through shared memory after backward:
// 800 kB is one chunk, two barriers of ceil(log2 2) = 1 latency, 5/3 of a reduction pass
// at the reduction rate: 2e-4 + 5/3 x 800000 / 1e9 = 0.0015333 s, none of it hidden.
// Across hosts, with 16-bit gradients or when switched off, the buckets take MPI's
// allreduce.
TEST(Predict, RanksOfOneHostSumThroughSharedMemory) {
  StepProfile p = two_layer_profile();
  PredictOptions one_host;
  one_host.ranks_per_host = 2;
  const Prediction r = predict_step(p, network(), 2, one_host);
  ASSERT_EQ(r.buckets.size(), 1u);
  EXPECT_EQ(r.buckets[0].how, "shared memory");
  const double sum_s = 2e-4 + 5.0 / 3.0 * 800000 / 1e9;
  EXPECT_NEAR(r.comm_s, sum_s, 1e-12);
  EXPECT_NEAR(r.hidden_s, 0, 1e-12);
  EXPECT_NEAR(r.step_s, 0.048 + sum_s, 1e-12);
  EXPECT_EQ(predict_step(p, network(), 4, one_host).buckets.size(), 2u);  // two hosts
  p.wire_bytes = 2;
  EXPECT_EQ(predict_step(p, network(), 2, one_host).buckets.size(), 2u);
  p = two_layer_profile();
  p.shared_memory = false;
  EXPECT_NEAR(predict_step(p, network(), 2, one_host).comm_s, 0.0806, 1e-12);
  // A gradient of 2.5 MiB goes through in three 1 MiB chunks: six barriers.
  EXPECT_NEAR(node_sum_cost(network(), 5 << 19, 2).seconds, 6e-4 + 5.0 / 3.0 * (5 << 19) / 1e9,
              1e-12);
}

// Mean Value Analysis by hand: stations of 1 s and 0.5 s, 0.5 s of think time. One
// customer: residences {1, 0.5}, cycle 2, throughput 0.5, queues {0.5, 0.25}. Two: residences
// {1 x 1.5, 0.5 x 1.25}, cycle 2.625, throughput 2 / 2.625.
TEST(Predict, ClosedNetworkByHand) {
  const ClosedNetwork one = solve_closed_network({1.0, 0.5}, 0.5, 1);
  EXPECT_NEAR(one.cycle_s, 2.0, 1e-12);
  EXPECT_NEAR(one.utilization[0], 0.5, 1e-12);
  const ClosedNetwork two = solve_closed_network({1.0, 0.5}, 0.5, 2);
  EXPECT_NEAR(two.residence_s[0], 1.5, 1e-12);
  EXPECT_NEAR(two.residence_s[1], 0.625, 1e-12);
  EXPECT_NEAR(two.cycle_s, 2.625, 1e-12);
  EXPECT_NEAR(two.utilization[0], 2 / 2.625, 1e-12);
  // Many customers: the 1 s station is the bottleneck, a cycle is N of its services.
  const ClosedNetwork many = solve_closed_network({1.0, 0.5}, 0.5, 200);
  EXPECT_NEAR(many.cycle_s / 200, 1.0, 0.01);
  EXPECT_NEAR(many.utilization[0], 1.0, 1e-3);
}

// A parameter server by hand: 4 MB of parameters; a 1 ms, 10 MB/s link between hosts (a
// shard moves in 0.401 s, a control word in 1 ms); a reduction rate of 1 GB/s; 10 ms of
// compute.
TEST(Predict, ParameterServerServedProtocolByHand) {
  StepProfile p;
  p.mode = DistMode::kDownpour;
  p.servers = 1, p.n_fetch = 1, p.n_push = 1;
  p.param_bytes = 4'000'000;
  p.global_batch = p.local_batch = 32;
  p.worker_compute_s = 0.010;
  NetworkModel net;
  net.inter_latency_s = 1e-3, net.inter_bandwidth_Bps = 1e7;
  net.intra_latency_s = 1e-6, net.intra_bandwidth_Bps = 1e9;
  net.reduce_Bps = 1e9;
  PredictOptions o;
  // 2 ranks = 1 worker: compute, a request word and a reply per pull and push, the deposit
  // and the pulled copy (0.401 s each), the server's apply and copy (8 MB at 1 GB/s).
  const double one_cycle = 0.010 + 4 * 0.001 + 2 * 0.401 + 0.008;
  const Prediction one = predict_step(p, net, 2, o);
  EXPECT_EQ(one.workers, 1);
  EXPECT_NEAR(one.step_s, one_cycle, 1e-9);
  EXPECT_NEAR(one.samples_per_s, 32 / one_cycle, 1e-6);
  EXPECT_NEAR(one.staleness, 0, 1e-12);
  // 5 ranks = 4 workers: the same network with 4 customers (solved by MVA), between one
  // worker's cycle and 4 x 0.401 s at each of the server's links, the bottleneck.
  const Prediction four = predict_step(p, net, 5, o);
  EXPECT_EQ(four.workers, 4);
  const ClosedNetwork q = solve_closed_network({0.401, 0.401, 0.008}, 0.014, 4);
  EXPECT_NEAR(four.step_s, q.cycle_s, 1e-12);
  EXPECT_GT(four.step_s, 4 * 0.401);
  EXPECT_LT(four.step_s, 4 * one_cycle);
  EXPECT_NEAR(four.samples_per_s, 4 * 32 / q.cycle_s, 1e-6);
  EXPECT_NEAR(four.staleness, 3, 1e-12);
  EXPECT_NE(four.bottleneck.find("server"), std::string::npos) << four.bottleneck;
  EXPECT_NE(four.bottleneck.find("link"), std::string::npos) << four.bottleneck;
  // Pulling every 2 steps, pushing every 4: a half and a quarter of the copies, deposits,
  // words and core passes.
  p.n_fetch = 2, p.n_push = 4;
  EXPECT_NEAR(predict_step(p, net, 2, o).step_s,
              0.010 + 2 * 0.001 * (0.5 + 0.25) + 0.401 * (0.5 + 0.25) + 0.004 * (0.5 + 0.25), 1e-9);
  EXPECT_NEAR(predict_step(p, net, 5, o).staleness, 3 * 3 / 8.0, 1e-12);
  // DC-ASGD: three passes over a deposit on the server's core.
  p.n_fetch = p.n_push = 1, p.mode = DistMode::kDcAsgd;
  EXPECT_NEAR(predict_step(p, net, 2, o).step_s, one_cycle + 2 * 0.004, 1e-9);
  // A host with a quarter of a core computes, applies and copies 4x slower.
  p.mode = DistMode::kDownpour, o.cores_per_host = 0.25;
  EXPECT_NEAR(predict_step(p, net, 2, o).step_s, 0.010 / 0.25 + 4 * 0.001 + 0.802 + 0.032, 1e-9);
  o.cores_per_host = 0;
  // Two servers of 4 MB shards: a worker visits both.
  p.servers = 2, p.param_bytes = 8'000'000;
  EXPECT_NEAR(predict_step(p, net, 3, o).step_s, 0.010 + 2 * (4 * 0.001 + 0.810), 1e-9);
  // Every rank on one host: the intra-host link.
  p.servers = 1, p.param_bytes = 4'000'000, o.ranks_per_host = 4;
  EXPECT_NEAR(predict_step(p, net, 2, o).step_s, 0.010 + 4 * 1e-6 + 2 * (1e-6 + 0.004) + 0.008,
              1e-9);
}

// network.json has one schema: what calibrate writes, predict reads back field for field,
// and the network model takes its medians (inter-host pair, CPU share per host).
TEST(Predict, NetworkJsonRoundTripsThroughOneSchema) {
  Calibration c;
  c.hosts.host_of_rank = {"h0", "h0", "h1"};
  c.hosts.hosts = {"h0", "h1"};
  c.hosts.leader = {0, 2};
  PairResult intra{0, 1, true, {{8, 1e-6, 10}, {1 << 20, 1e-4, 10}}, {1e-6, 1e10}, false};
  PairResult inter{0,    2, false, {{8, 1e-4, 10, 2e-5}, {1 << 20, 0.1, 3, 3e-3}}, {1e-4, 1.25e7},
                   false};
  c.pairs = {intra, inter};
  c.allreduce = {{-1, "iallreduce", 3, {{1024, 2e-4, 5}}}, {0, "default", 3, {{1024, 3e-4, 5}}}};
  c.rma = {{"get", 1, 0, {{4096, 5e-4, 4}}, {5e-4, 1e7}}};
  c.reduce_Bps = {2e9, 3e9, 4e9};
  c.cpu_share = {0.5, 0.5, 0.25};
  c.cpu_slice_s = {0.005, 0.005, 0.0025};
  c.gemm_flops_per_s = {1e11, 1e11, 5e10};
  c.memory_Bps = {2e10, 2e10, 1e10};
  c.flags = {"slow pair"};
  c.seconds = 1.5;
  const nlohmann::json j = c.to_json();
  EXPECT_EQ(Calibration::from_json(j, "net.json").to_json(), j);
  const NetworkModel n = network_model(Calibration::from_json(j, "net.json"), "net.json");
  EXPECT_DOUBLE_EQ(n.inter_bandwidth_Bps, 1.25e7);
  EXPECT_DOUBLE_EQ(n.intra_latency_s, 1e-6);
  EXPECT_DOUBLE_EQ(n.reduce_Bps, 3e9);
  EXPECT_DOUBLE_EQ(n.cores_per_host, 1.0);  // hosts: 1.0 and 0.25; the upper median
  EXPECT_DOUBLE_EQ(n.cpu_slice_s, 0.005);
  ASSERT_EQ(n.measured.size(), 1u);  // the polled iallreduce curve, as the trainer runs
  EXPECT_DOUBLE_EQ(n.measured[0].samples[0].second, 2e-4);
  // A transfer's CPU from the link between hosts (the fitted kind), by size.
  EXPECT_EQ(n.transfer_cpu,
            (std::vector<std::pair<int64_t, double>>{{8, 2e-5}, {int64_t{1} << 20, 3e-3}}));
  nlohmann::json bad = j;
  bad["hosts"][1]["ranks"] = {7};
  EXPECT_THROW(Calibration::from_json(bad, "net.json"), std::exception);
  bad = j;
  bad.erase("reduce_Bps_per_core");
  EXPECT_THROW(Calibration::from_json(bad, "net.json"), std::exception);
  // The slices: optional (older files); a negative one is refused.
  bad = j;
  bad.erase("cpu_slice_s_per_rank");
  EXPECT_EQ(network_model(Calibration::from_json(bad, "net.json"), "net.json").cpu_slice_s, 0);
  bad["cpu_slice_s_per_rank"] = {0.005, -1.0, 0.0025};
  EXPECT_THROW(Calibration::from_json(bad, "net.json"), std::exception);
  // A transfer's CPU: optional (older files); a negative one is refused, naming the file.
  bad = j;
  for (auto& s : bad["point_to_point"][1]["one_way"]) s.erase("cpu_s");
  EXPECT_TRUE(
      network_model(Calibration::from_json(bad, "net.json"), "net.json").transfer_cpu.empty());
  bad["point_to_point"][1]["one_way"][0]["cpu_s"] = -1.0;
  try {
    Calibration::from_json(bad, "net.json");
    ADD_FAILURE() << "a negative cpu_s was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("net.json: a sample's cpu_s is -1"), std::string::npos)
        << e.what();
  }
  // Compute ceilings: optional (older files), but when there, positive and one per rank.
  bad = j;
  bad.erase("compute_per_rank");
  EXPECT_TRUE(Calibration::from_json(bad, "net.json").gemm_flops_per_s.empty());
  bad = j;
  bad["compute_per_rank"]["memory_Bps"] = {2e10, 0.0, 1e10};
  EXPECT_THROW(Calibration::from_json(bad, "net.json"), std::exception);
  bad["compute_per_rank"]["memory_Bps"] = {2e10};
  EXPECT_THROW(Calibration::from_json(bad, "net.json"), std::exception);
}

// One link between hosts has no spread between links; its range is its own: the measured
// sizes' times over its fit where bytes over bandwidth outweigh the latency (the 8-byte
// sample, ten times its fit, does not count).
TEST(Predict, OneLinksSpreadAboutItsFit) {
  Calibration c;
  PairResult inter{0, 1, false, {}, {1e-4, 1e7}, false};
  const double fit[] = {0.0101, 0.0201, 0.0401, 0.0801};  // 1e5 .. 8e5 bytes
  const double ratio[] = {0.9, 1.0, 1.1, 1.3};
  inter.samples.push_back({8, 10 * (1e-4 + 8e-7), 5});
  for (int k = 0; k < 4; ++k) inter.samples.push_back({100000 << k, ratio[k] * fit[k], 5});
  c.pairs = {inter};
  c.reduce_Bps = {1e9, 1e9};
  const NetworkModel n = network_model(c, "net.json");
  EXPECT_NEAR(n.slow_links.bandwidth, 1.1 + 0.7 * 0.2, 1e-9);  // 90th percentile of the four
  EXPECT_NEAR(n.fast_links.bandwidth, 0.9 + 0.3 * 0.1, 1e-9);  // 10th
  EXPECT_EQ(n.slow_links.latency, 1);
}

// Latency and bandwidth spread apart: one pair of three whose small messages met a
// budget's pause (40x the others' latency) slows the latencies at the slow end, not the
// bytes; a measured curve's smallest time takes the latency's factor, the rest the bytes'.
TEST(Predict, LinkSpreadApartForLatencyAndBandwidth) {
  Calibration c;
  c.pairs = {{0, 1, false, {}, {1e-5, 1e8}, false},
             {0, 2, false, {}, {1e-5, 1e8}, false},
             {1, 2, false, {}, {4e-4, 1e8}, false}};
  c.reduce_Bps = {1e9, 1e9, 1e9};
  NetworkModel n = network_model(c, "net.json");
  EXPECT_NEAR(n.slow_links.latency, (1e-5 + 0.8 * 3.9e-4) / 1e-5, 1e-9);
  EXPECT_EQ(n.slow_links.bandwidth, 1);
  EXPECT_EQ(n.fast_links.latency, 1);
  n.measured = {{2, {{4, 1e-3}, {1000000, 11e-3}}}};
  const NetworkModel s = scaled_links(n, {2, 3});
  EXPECT_DOUBLE_EQ(s.inter_latency_s, 2e-5);
  EXPECT_DOUBLE_EQ(s.inter_bandwidth_Bps, 1e8 / 3);
  EXPECT_NEAR(s.measured[0].samples[0].second, 2e-3, 1e-15);
  EXPECT_NEAR(s.measured[0].samples[1].second, 2e-3 + 30e-3, 1e-15);
}

// A calibrated curve is read monotone in bytes: a size timed slower than a larger one (a
// slow spell of the hosts) takes the larger one's time; the rest stay as measured.
TEST(Predict, AllreduceCurveNeverFasterForMoreBytes) {
  Calibration c;
  c.pairs = {{0, 1, false, {}, {1e-4, 1e7}, false}};
  c.reduce_Bps = {1e9, 1e9};
  c.allreduce = {{-1,
                  "iallreduce",
                  2,
                  {{131072, 3.4e-3, 5},
                   {262144, 6.8e-3, 5},
                   {524288, 6.2e-3, 5},
                   {65536, 1.1e-3, 5},
                   {1048576, 12.2e-3, 5}}}};
  const NetworkModel n = network_model(c, "net.json");
  ASSERT_EQ(n.measured.size(), 1u);
  const std::vector<std::pair<int64_t, double>> want = {
      {65536, 1.1e-3}, {131072, 3.4e-3}, {262144, 6.2e-3}, {524288, 6.2e-3}, {1048576, 12.2e-3}};
  EXPECT_EQ(n.measured[0].samples, want);
}

// 16-bit gradients: each bucket costs the allreduce of half its bytes plus an encode and a
// decode pass (2 x its f32 bytes at the reduction rate); local SGD: no bucket, one blocking
// allreduce of all parameters every H steps, nothing hidden behind backward.
TEST(Predict, CompressionAndLocalSgdByHand) {
  StepProfile p = two_layer_profile();
  p.wire_bytes = 2;
  const Prediction c = predict_step(p, network(), 2, {});
  // Ring on 2 ranks over 200 kB: 2a + Sb + S g / 2 = 0.0203 (+ 0.0008 codec) per bucket;
  // the second in flight with the first: 400 kB together, 0.0404.
  ASSERT_EQ(c.buckets.size(), 2u);
  EXPECT_NEAR(c.buckets[0].seconds, 0.0203, 1e-12);
  EXPECT_NEAR(c.comm_s, 0.0404 + 2 * 0.0008, 1e-12);
  EXPECT_EQ(predict_step(p, network(), 1, {}).comm_s, 0);  // one rank: nothing sent or encoded

  p = two_layer_profile();
  p.sync_every = 16;
  const Prediction l = predict_step(p, network(), 2, {});
  // 800 kB on 2 ranks: 2a + Sb + S g / 2 = 0.0806, every 16 steps.
  EXPECT_NEAR(l.comm_s, 0.0806 / 16, 1e-12);
  EXPECT_NEAR(l.hidden_s, 0, 1e-12);
  EXPECT_NEAR(l.step_s, 0.048 + 0.0806 / 16, 1e-12);
  p.wire_bytes = 2;  // the changes in bf16: half the bytes, plus 2 x 800 kB of codec
  EXPECT_NEAR(predict_step(p, network(), 2, {}).comm_s, (0.0404 + 0.0016) / 16, 1e-12);
}

// The accuracy-risk grades on a hand-made profile of 100 steps an epoch (6400 samples,
// batch 64): local SGD / DiLoCo by H / 100, the parameter server by its staleness W - 1,
// asynchronous DiLoCo by H W / 100, and any parameter server high for a run trained with
// Adam.
TEST(Predict, AccuracyRiskGrades) {
  const StepProfile p = two_layer_profile();
  std::map<std::string, std::vector<Risk>> at;  // candidate -> risk at 2, 8, 32 ranks
  const std::vector<Candidate> cands = training_candidates(p);
  for (const Candidate& c : cands)
    for (int r : {2, 8, 32}) at[c.name].push_back(accuracy_risk(c.profile, r).level);
  using enum Risk;
  EXPECT_EQ(at["sync"], (std::vector<Risk>{kNone, kNone, kNone}));
  EXPECT_EQ(at["sync bf16"], (std::vector<Risk>{kLow, kLow, kLow}));
  EXPECT_EQ(at["local SGD H=4"], (std::vector<Risk>{kMedium, kMedium, kMedium}));  // 4 %
  EXPECT_EQ(at["diloco H=4"], (std::vector<Risk>{kLow, kLow, kLow}));
  EXPECT_EQ(at["diloco H=16 bf16"], (std::vector<Risk>{kMedium, kMedium, kMedium}));  // 16 %
  EXPECT_EQ(at["diloco H=64"], (std::vector<Risk>{kHigh, kHigh, kHigh}));             // 64 %
  // Staleness 0, 6, 30 (one server).
  EXPECT_EQ(at["downpour"], (std::vector<Risk>{kLow, kMedium, kHigh}));
  EXPECT_EQ(at["dcasgd"], (std::vector<Risk>{kLow, kMedium, kHigh}));
  // H W / the steps of an epoch: 16 % with one worker already; with 1600 steps an epoch 1 %,
  // 7 % and 31 % with 1, 7 and 31 workers.
  EXPECT_EQ(at["async diloco H=16"], (std::vector<Risk>{kHigh, kHigh, kHigh}));
  StepProfile long_epoch = p;
  long_epoch.train_samples = 16 * 6400;
  const std::vector<Candidate> long_cands = training_candidates(long_epoch);
  const Candidate& async16 = long_cands[13];
  EXPECT_EQ(async16.name, "async diloco H=16");
  EXPECT_EQ(accuracy_risk(async16.profile, 2).level, kLow);
  EXPECT_EQ(accuracy_risk(async16.profile, 8).level, kMedium);
  EXPECT_EQ(accuracy_risk(async16.profile, 32).level, kHigh);
  const AccuracyRisk d16 = accuracy_risk(cands[6].profile, 2);
  EXPECT_EQ(cands[6].name, "diloco H=16");
  EXPECT_EQ(d16.text(),
            "medium: each rank takes 16 steps alone (16 % of an epoch) between averages, outer "
            "Nesterov step");
  // A run with Adam: the server would apply its rate to plain SGD.
  StepProfile adam = p;
  adam.optimizer = OptimizerKind::kAdam;
  const std::vector<Candidate> with_adam = training_candidates(adam);
  const AccuracyRisk dp = accuracy_risk(with_adam[11].profile, 2);
  EXPECT_EQ(with_adam[11].name, "downpour");
  EXPECT_EQ(dp.level, kHigh);
  EXPECT_NE(dp.why.find("the run trains with adam, the servers apply plain SGD (the launch line "
                        "sets optimizer.lr=0.05"),
            std::string::npos)
      << dp.why;
  EXPECT_EQ(accuracy_risk(with_adam[0].profile, 8).level, kNone);  // sync is not affected
  // Without the training split's size, a local-SGD share is unknown: medium.
  StepProfile unknown = p;
  unknown.train_samples = 0;
  EXPECT_EQ(accuracy_risk(training_candidates(unknown)[3].profile, 4).level, kMedium);
}

// On a slow network every candidate is costed at every rank count and ranked by accuracy
// risk, then samples per second; a parameter server is costed from the sync profile with
// the whole batch per worker; the report names the best with its complete launch lines,
// and the faster candidate of higher risk with its options.
TEST(Predict, RecommendRanksEveryCandidateAtEveryRankCount) {
  const StepProfile p = two_layer_profile();
  const std::vector<Candidate> cands = training_candidates(p);
  ASSERT_EQ(cands.size(), 15u);  // sync, bf16, 3 x (local, diloco, diloco bf16), 4 PS
  const std::vector<Recommendation> ranked = recommend(cands, network(), {1, 2, 4, 8}, {});
  EXPECT_EQ(ranked.size(), 1u + 11u * 3 + 4u * 3);  // 1 rank: sync only; PS from 2 ranks
  auto tier = [](const Recommendation& r) {
    return r.risk.level <= Risk::kLow ? 0 : r.risk.level == Risk::kMedium ? 1 : 2;
  };
  for (size_t i = 1; i < ranked.size(); ++i) {
    EXPECT_LE(tier(ranked[i - 1]), tier(ranked[i]));
    if (tier(ranked[i - 1]) == tier(ranked[i]))
      EXPECT_GE(ranked[i - 1].at.samples_per_s, ranked[i].at.samples_per_s);
  }
  // 100 ms of gradient traffic a step against 48 ms of compute: the fewest exchanges are
  // fastest, on the most ranks: asynchronous DiLoCo (7 workers of the whole batch,
  // exchanging every 64 steps), at a high risk (64 steps x 7 workers against 100 steps an
  // epoch). First comes the fastest of low risk: DiLoCo every 4 steps with bf16 changes.
  const Recommendation* fastest = &ranked.front();
  for (const auto& r : ranked)
    if (r.at.samples_per_s > fastest->at.samples_per_s) fastest = &r;
  EXPECT_EQ(fastest->candidate->name, "async diloco H=64");
  EXPECT_EQ(fastest->at.ranks, 8);
  EXPECT_EQ(fastest->risk.level, Risk::kHigh);
  EXPECT_EQ(ranked.front().candidate->name, "diloco H=4 bf16");
  EXPECT_EQ(ranked.front().at.ranks, 8);
  EXPECT_LE(ranked.front().risk.level, Risk::kLow);
  for (const auto& r : ranked) {
    if (r.candidate->name == "downpour" && r.at.ranks == 2) {
      EXPECT_NEAR(r.at.compute_s, 0.094, 1e-12);  // one worker, the whole batch
    }
    if (r.candidate->name == "sync" && r.at.ranks == 1) {
      EXPECT_NEAR(r.epoch_s, 6400 / (64 / 0.094), 1e-9);
    }
  }
  std::string report = recommendation_report(p, ranked, 5, "my.toml", 1);
  EXPECT_NE(report.find("best (of those with a low accuracy risk, the fewest ranks within 5% of "
                        "the fastest): diloco H=4 bf16 on 8 ranks"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("sbatch -N 8 --ntasks-per-node=1 jobs/train.sbatch my.toml --set "
                        "'distributed.sync_every=4' --set 'distributed.compression=\"bf16\"' "
                        "--set 'distributed.outer=\"nesterov\"'"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("mpirun -np 8 --hostfile hosts"), std::string::npos) << report;
  EXPECT_NE(report.find("faster, at a high accuracy risk: async diloco H=64 on 8 ranks (2."),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("--set 'distributed.n_push=64' --set 'distributed.outer=\"nesterov\"'"),
            std::string::npos)
      << report;
  // The parameter server alone: its sbatch line; from an Adam run, with an SGD rate.
  StepProfile adam = p;
  adam.optimizer = OptimizerKind::kAdam;
  const std::vector<Candidate> with_adam = training_candidates(adam);
  const std::vector<Candidate> ps_only(with_adam.begin() + 11, with_adam.end());
  report =
      recommendation_report(adam, recommend(ps_only, network(), {2, 4, 8}, {}), 5, "my.toml", 1);
  EXPECT_NE(report.find("HPDL_PS_MODE=downpour HPDL_SERVERS=1 sbatch -N "), std::string::npos)
      << report;
  EXPECT_NE(report.find("jobs/train_ps.sbatch my.toml --set 'distributed.mode=\"downpour\"' --set "
                        "'distributed.servers=1' --set 'optimizer.name=\"sgd\"' --set "
                        "'optimizer.momentum=0' --set 'optimizer.lr=0.05'"),
            std::string::npos)
      << report;
  // A run already on SGD keeps its own rate.
  for (const std::string& set : cands[11].sets)
    EXPECT_EQ(set.find("optimizer.lr"), std::string::npos) << set;
  StepProfile ps = p;
  ps.mode = DistMode::kDownpour;
  EXPECT_THROW(training_candidates(ps), std::exception);
}

namespace hpdl {
namespace {

// A CPU budget is counted once: compute scales by the CPU a thread had when profiled over
// the CPU it has on the target hosts, each at most a core.
TEST(Predict, CpuBudgetCountedOnce) {
  StepProfile p;
  p.threads = 1;
  PredictOptions half;
  half.cores_per_host = 0.5;
  bool shared = false;
  // Profiled on a host of half a core, forecast for the same hosts: not slowed again.
  p.cores_per_rank = 0.5;
  EXPECT_DOUBLE_EQ(cpu_scale(p, half, 1, shared), 1.0);
  EXPECT_TRUE(shared);
  // Two ranks on such a host share it: a quarter core each, twice the profile's time.
  EXPECT_DOUBLE_EQ(cpu_scale(p, half, 2, shared), 2.0);
  // The same profile forecast for whole cores: half the time.
  EXPECT_DOUBLE_EQ(cpu_scale(p, PredictOptions{}, 1, shared), 0.5);
  EXPECT_FALSE(shared);
  // A profile without the record (older manifests) is taken as a whole core per thread.
  p.cores_per_rank = 0;
  EXPECT_DOUBLE_EQ(cpu_scale(p, half, 1, shared), 2.0);
  // A machine of 2 cores for a rank of 2 threads: a core each, whatever more it had.
  p.threads = 2, p.cores_per_rank = 8;
  PredictOptions two;
  two.cores_per_host = 2;
  EXPECT_DOUBLE_EQ(cpu_scale(p, two, 1, shared), 1.0);
}

}  // namespace
}  // namespace hpdl

namespace hpdl {
namespace {

// The range: fast compute on fast links below the forecast, slow on slow above it; without
// any spread it is the forecast itself.
TEST(Predict, BandSpansTheFastAndSlowEnds) {
  StepProfile p = two_layer_profile();
  NetworkModel net = network();
  p.compute_s.assign(20, 0.048);
  Prediction r = predict_with_band(p, net, 4, {});
  EXPECT_DOUBLE_EQ(r.step_s_low, r.step_s);
  EXPECT_DOUBLE_EQ(r.step_s_high, r.step_s);
  for (int k = 0; k < 20; ++k) p.compute_s[size_t(k)] = 0.040 + 0.001 * k;  // 40..59 ms
  net.slow_links = {1.5, 1.5}, net.fast_links = {0.8, 0.8};
  r = predict_with_band(p, net, 4, {});
  EXPECT_LT(r.step_s_low, r.step_s);
  EXPECT_GT(r.step_s_high, r.step_s);
  // The links alone: at one rank there is no communication, so only compute moves it, by
  // the 5th and 95th percentiles over the median (40.95 / 49.5 and 58.05 / 49.5).
  const Prediction one = predict_with_band(p, net, 1, {});
  EXPECT_NEAR(one.step_s_low / one.step_s, 40.95 / 49.5, 1e-9);
  EXPECT_NEAR(one.step_s_high / one.step_s, 58.05 / 49.5, 1e-9);
}

// On hosts of a quarter core whose budget runs a thread for 2.5 ms slices (paused 7.5 ms
// after each), a step meets one pause fewer or one more than its average; a
// parameter-server worker's transfers are throttled with it (budget_charge_s).
TEST(Predict, BandHoldsABudgetsPausesAndAThrottledWorker) {
  StepProfile p = two_layer_profile();
  NetworkModel net = network();
  net.cpu_slice_s = 0.0025;
  PredictOptions quarter;
  quarter.cores_per_host = 0.25;
  // One rank: 0.094 s of CPU is 37.6 slices; 0.376 s on average, 37 or 38 pauses of 7.5 ms.
  Prediction r = predict_with_band(p, net, 1, quarter);
  EXPECT_NEAR(r.step_s, 0.376, 1e-12);
  EXPECT_NEAR(r.step_s_low, 0.094 + 37 * 0.0075, 1e-12);
  EXPECT_NEAR(r.step_s_high, 0.094 + 38 * 0.0075, 1e-12);
  // A step shorter than a slice: most run unpaused, some meet a whole pause.
  net.cpu_slice_s = 0.5;
  r = predict_with_band(p, net, 1, quarter);
  EXPECT_NEAR(r.step_s_low, 0.094, 1e-12);
  EXPECT_NEAR(r.step_s_high, 0.094 + 1.5, 1e-12);
  // Unmeasured slices (an older calibration) or a whole core: no such term.
  net.cpu_slice_s = 0;
  EXPECT_DOUBLE_EQ(predict_with_band(p, net, 1, quarter).step_s_low, 0.376);
  net.cpu_slice_s = 0.0025;
  EXPECT_DOUBLE_EQ(predict_with_band(p, net, 1, {}).step_s_high, 0.094);
  // A Downpour worker (0.01 s of CPU: 3.3 slices of 3 ms, pauses of 9 ms) moving 4 kB
  // shards in 1.4 ms: a transfer shorter than a slice costs it 1/q = 4x in wall time on
  // average (the forecast and the slow end); the fast end leaves them unthrottled.
  StepProfile ps = downpour_profile();
  net.inter_latency_s = 1e-3, net.inter_bandwidth_Bps = 1e7, net.reduce_Bps = 1e9;
  net.cpu_slice_s = 0.003;
  const double core = 2 * 4000 / 0.25e9;  // the server's apply and copy
  const double charge = 3 * 0.0014;
  r = predict_with_band(ps, net, 2, quarter);
  EXPECT_NEAR(r.step_s, 0.040 + 4 * 0.001 + 2 * charge + 2 * 0.0014 + core, 1e-9);
  EXPECT_NEAR(r.step_s_low, 0.037 + 4 * 0.001 + 2 * 0.0014 + core, 1e-9);
  EXPECT_NEAR(r.step_s_high, 0.046 + 4 * 0.001 + 2 * charge + 2 * 0.0014 + core, 1e-9);
  // Slow links (3x: 4.2 ms, over a slice): the charge falls as slice^2 / move.
  net.slow_links = {3, 3};
  r = predict_with_band(ps, net, 2, quarter);
  const double slow_charge = 3 * 0.003 * 0.003 / 0.0042;
  EXPECT_NEAR(r.step_s_high, 0.046 + 4 * 0.003 + 2 * slow_charge + 2 * 0.0042 + core, 1e-9);
  net.slow_links = {};
  // 4 MB shards (0.401 s, 134 slices) go on in the kernel while it is paused: 67 µs each.
  ps.param_bytes = 4'000'000;
  r = predict_with_band(ps, net, 2, quarter);
  const double long_charge = 3 * 0.003 * 0.003 / 0.401;
  EXPECT_NEAR(r.step_s, 0.040 + 4 * 0.001 + 2 * long_charge + 2 * 0.401 + 0.032, 1e-9);
  EXPECT_NEAR(r.step_s_high, 0.046 + 4 * 0.001 + 2 * long_charge + 2 * 0.401 + 0.032, 1e-9);
}

// Where the calibration measured a transfer's CPU at each end, a budgeted worker's transfer
// costs the pauses of that CPU (1/q - 1 per CPU second), its own in its cycle and the
// server's at the server's core, whatever the transfer's time.
TEST(Predict, ParameterServerTransfersCostThePausesOfTheirCpu) {
  StepProfile ps = downpour_profile();
  NetworkModel net = network();
  net.inter_latency_s = 1e-3, net.inter_bandwidth_Bps = 1e7, net.reduce_Bps = 1e9;
  net.cpu_slice_s = 0.003;
  net.transfer_cpu = {{8, 1e-5}, {8000, 2e-4}};
  const double c = 1e-5 + 1.9e-4 * 3992.0 / 7992.0;  // read between 8 B and 8 kB
  EXPECT_NEAR(transfer_cpu_s(net, 4000), c, 1e-15);
  PredictOptions quarter;
  quarter.cores_per_host = 0.25;
  const double core = 2 * 4000 / 0.25e9 + 2 * c * 3;  // apply and copy, and its pauses
  const Prediction one = predict_step(ps, net, 2, quarter);
  EXPECT_NEAR(one.step_s, 0.040 + 4 * 0.001 + 2 * c * 3 + 2 * 0.0014 + core, 1e-9);
  // Seven workers queue at the server's core: at least seven of its visits a step.
  EXPECT_GE(predict_step(ps, net, 8, quarter).step_s, 7 * core);
  // A whole core pauses nothing; an older calibration keeps the rule by the transfer's time.
  EXPECT_NEAR(predict_step(ps, net, 2, {}).step_s, 0.010 + 4 * 0.001 + 2 * 0.0014 + 2 * 4000 / 1e9,
              1e-9);
  net.transfer_cpu = {};
  EXPECT_EQ(transfer_cpu_s(net, 4000), -1);
  EXPECT_NEAR(predict_step(ps, net, 2, quarter).step_s,
              0.040 + 4 * 0.001 + 2 * 3 * 0.0014 + 2 * 0.0014 + 2 * 4000 / 0.25e9, 1e-9);
}

TEST(Predict, TransferCpuReadsBetweenAndBeyondItsSizes) {
  NetworkModel net;
  net.transfer_cpu = {{8, 1e-5}, {1024, 2e-5}, {8192, 9e-5}};
  EXPECT_DOUBLE_EQ(transfer_cpu_s(net, 4), 1e-5);  // below the smallest: the smallest's
  EXPECT_NEAR(transfer_cpu_s(net, 1024), 2e-5, 1e-15);
  EXPECT_NEAR(transfer_cpu_s(net, 4608), 5.5e-5, 1e-15);   // halfway
  EXPECT_NEAR(transfer_cpu_s(net, 15360), 1.6e-4, 1e-15);  // beyond: the last two's line
}

// The pauses a worker meets in a transfer, in wall time beyond it: 1/q - 1 of the transfer
// up to a slice (the transfer over q in all), falling as slice^2 / move beyond it,
// continuous at the slice; nothing on a whole core or for nothing moved.
TEST(Predict, BudgetChargeOfATransferIsContinuous) {
  EXPECT_NEAR(budget_charge_s(1e-6, 0.003, 0.25), 3e-6, 1e-12);    // short: 1/q - 1 of it
  EXPECT_NEAR(budget_charge_s(0.003, 0.003, 0.25), 0.009, 1e-12);  // one slice: 12 ms in all
  EXPECT_NEAR(budget_charge_s(0.003 - 1e-9, 0.003, 0.25),
              budget_charge_s(0.003 + 1e-9, 0.003, 0.25), 1e-8);
  EXPECT_NEAR(budget_charge_s(0.006, 0.003, 0.25), 0.0045, 1e-12);  // two slices: half of it
  EXPECT_NEAR(budget_charge_s(0.5, 0.003, 0.25), 5.4e-5, 1e-12);    // mostly the link's
  EXPECT_GT(budget_charge_s(0.006, 0.003, 0.25), budget_charge_s(0.009, 0.003, 0.25));
  EXPECT_EQ(budget_charge_s(0.001, 0.003, 1.0), 0);  // a whole core is never paused
  EXPECT_EQ(budget_charge_s(0, 0.003, 0.25), 0);
  EXPECT_EQ(budget_charge_s(0.001, 0, 0.25), 0);  // slices not measured
}

// A synchronous step on quarter-core hosts ends with the last rank's pause: two ranks of
// 0.048 s of CPU each (half the batch), slices of 5 ms, pauses of 15: 9.6 slices, 9 or 10
// pauses; the average meets 0.6 of the tenth, the later of two ranks 1 - 0.4^2 = 0.84.
TEST(Predict, SynchronousStepWaitsForTheLastRanksPause) {
  StepProfile p = two_layer_profile();
  p.bucket_bytes = {};  // compute alone
  NetworkModel net = network();
  net.cpu_slice_s = 0.005;
  PredictOptions quarter;
  quarter.cores_per_host = 0.25;
  Prediction r = predict_with_band(p, net, 2, quarter);
  EXPECT_NEAR(r.budget_wait_s, 0.015 * (0.84 - 0.6), 1e-12);
  EXPECT_NEAR(r.step_s, 0.192 + 0.015 * 0.24, 1e-12);
  // The range's ends take whole pauses: 9 and 10.
  EXPECT_NEAR(r.step_s_low, 0.048 + 9 * 0.015, 1e-12);
  EXPECT_NEAR(r.step_s_high, 0.048 + 10 * 0.015, 1e-12);
  // Eight ranks (0.0135 s of CPU each, 2.7 slices): 1 - 0.3^8 of a third pause against 0.7.
  EXPECT_NEAR(predict_step(p, net, 8, quarter).budget_wait_s, 0.015 * (1 - std::pow(0.3, 8) - 0.7),
              1e-12);
  // Local SGD averaging every 16 steps: the last rank's extra pause every 16 steps
  // (153.6 slices).
  p.sync_every = 16;
  EXPECT_NEAR(predict_step(p, net, 2, quarter).budget_wait_s, 0.015 * (0.84 - 0.6) / 16, 1e-9);
  p.sync_every = 1;
  // Under a slice between two exchanges (0.75 s slices: 0.064 of one): no such wait.
  net.cpu_slice_s = 0.75;
  EXPECT_EQ(predict_step(p, net, 2, quarter).budget_wait_s, 0);
  net.cpu_slice_s = 0.005;
  // One rank, a whole core, or slices not measured: no such wait.
  EXPECT_EQ(predict_step(p, net, 1, quarter).budget_wait_s, 0);
  EXPECT_EQ(predict_step(p, net, 2, {}).budget_wait_s, 0);
  net.cpu_slice_s = 0;
  EXPECT_EQ(predict_step(p, net, 2, quarter).budget_wait_s, 0);
}

}  // namespace
}  // namespace hpdl
