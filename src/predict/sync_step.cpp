// The synchronous step model of `hpdl predict` (see predictor.hpp).
#include <algorithm>
#include <cmath>

#include "hpdl/core/sample_stats.hpp"
#include "hpdl/predict/batch_split.hpp"
#include "hpdl/predict/predictor.hpp"

namespace hpdl {

using sample_stats::mean;

namespace {
// 16-bit compression's own work on f32_bytes of values: encode (with error feedback) and
// decode, two passes at about the calibrated reduction rate; 0 without compression or
// with one rank.
double codec_s(const StepProfile& p, const NetworkModel& net, int64_t f32_bytes, int ranks) {
  return ranks > 1 && p.wire_bytes < 4 && net.reduce_Bps > 0 ? 2.0 * f32_bytes / net.reduce_Bps : 0;
}
}  // namespace

double expected_max_factor(std::vector<double> x, int n) {
  if (x.empty() || n <= 1) return 1;
  std::sort(x.begin(), x.end());
  const double m = mean(x), k = double(x.size());
  double e = 0;  // E[max of n draws with replacement] over the sorted empirical distribution
  for (size_t i = 0; i < x.size(); ++i) e += x[i] * (std::pow((i + 1) / k, n) - std::pow(i / k, n));
  return m > 0 ? e / m : 1;
}

double thread_share(const StepProfile& p, const PredictOptions& o, int on_host) {
  const double threads = std::max(p.threads, 1);
  return o.cores_per_host > 0 ? std::min(1.0, o.cores_per_host / (on_host * threads)) : 1.0;
}

double cpu_scale(const StepProfile& p, const PredictOptions& o, int on_host, bool& shared) {
  const double threads = std::max(p.threads, 1);
  const double profiled = p.cores_per_rank > 0 ? std::min(1.0, p.cores_per_rank / threads) : 1.0;
  const double target = thread_share(p, o, on_host);
  shared = target < 1.0;
  return profiled / target;
}

Prediction predict_step(const StepProfile& p, const NetworkModel& net, int ranks,
                        const PredictOptions& o) {
  if (p.async()) return predict_ps_step(p, net, ranks, o);
  Prediction r;
  r.ranks = ranks;
  r.hosts = (ranks + o.ranks_per_host - 1) / o.ranks_per_host;
  const StepProfile b = at_batch(p, double(p.global_batch) / ranks);  // a rank's share
  double forward = 0, backward = 0;
  for (size_t i = 0; i < b.layers.size(); ++i)
    forward += b.forward_s[i], backward += b.backward_s[i];
  r.compute_s = b.data_s + forward + b.loss_s + backward + b.update_s + b.other_s;
  const double cpu = cpu_scale(p, o, std::min(ranks, o.ranks_per_host), r.oversubscribed);
  r.compute_s *= cpu;
  r.straggler_factor = expected_max_factor(p.compute_s, ranks);
  r.compute_s *= r.straggler_factor;
  // Under a budget of q < 1 core (its slices measured) a rank computes compute_s q
  // CPU-seconds between two exchanges (a step; local SGD: H steps), k slices, and meets
  // floor(k) or floor(k) + 1 pauses by where its budget's cycle stands: the average meets
  // frac(k) of an extra one. The exchange ends with the last of N ranks, whose cycles are
  // their own: it meets the extra pause with probability 1 - (1 - frac(k))^N. Only where
  // k >= 1: a shorter burst after the exchange's idle wait often meets no pause at all.
  // (Measured on the validation grid: docs/results.md, "The validation grid a third time".)
  const double q = thread_share(p, o, std::min(ranks, o.ranks_per_host));
  if (o.last_ranks_pause && ranks > 1 && q < 1 && net.cpu_slice_s > 0) {
    const double h = double(std::max<int64_t>(p.sync_every, 1));
    const double k = h * r.compute_s * q / net.cpu_slice_s, f = k - std::floor(k);
    const double pause = net.cpu_slice_s * (1 / q - 1);
    if (k >= 1) r.budget_wait_s = pause * (1 - std::pow(1 - f, ranks) - f) / h;
    r.compute_s += r.budget_wait_s;
  }
  if (p.sync_every > 1) {
    // Local SGD: no communication in a step; every H steps one blocking allreduce of the
    // parameter changes (16-bit: half the bytes, plus an encode and a decode pass).
    const int64_t bytes = p.param_bytes * p.wire_bytes / 4;
    const AllreduceCost c = allreduce_cost(net, bytes, ranks, o.ranks_per_host);
    r.buckets.push_back(c);
    double average = c.seconds;
    // On ranks whose CPU pauses the average comes after the interval's compute: what the
    // calibration measured an allreduce to cost there, which holds the last rank's pause
    // (so that is not counted twice).
    const double h = double(p.sync_every);
    const double excess = q < 1 ? after_compute_excess_s(net, bytes, ranks, o.ranks_per_host,
                                                         h * (r.compute_s - r.budget_wait_s) * q)
                                : 0;
    if (excess > 0) {
      average += excess;
      r.compute_s -= r.budget_wait_s;
      r.budget_wait_s = 0;
    }
    r.comm_s = (average + codec_s(p, net, p.param_bytes, ranks)) / h;
  }
  // Ranks of one host with f32 gradients: one sum through shared memory after backward,
  // nothing hidden.
  const bool node_sum = p.sync_every == 1 && p.wire_bytes == 4 && p.shared_memory && ranks > 1 &&
                        ranks <= o.ranks_per_host;
  if (node_sum) {
    int64_t bytes = 0;
    for (int64_t b : p.bucket_bytes) bytes += b;
    r.buckets.push_back(node_sum_cost(net, bytes, ranks));
    r.comm_s = r.buckets.back().seconds;
  }
  // Buckets start as backward completes them (last layers first) and advance one round per
  // MPI test the trainer makes after each later layer; the rest waits for the step's end.
  // A bucket that starts while earlier ones are in flight shares their link and their tests:
  // the group's last completes when all its bytes have moved, so it costs what it adds to
  // the group's one allreduce (the trainer's traces show the small bucket hidden in the
  // large one's time, not added to it).
  const auto cost = [&](int64_t bytes) {
    return allreduce_cost(net, bytes * p.wire_bytes / 4, ranks, o.ranks_per_host);
  };
  int64_t group_bytes = 0;  // the buckets in flight together so far
  double group_start = 0, group_end = 0;
  for (size_t k = 0; k < p.bucket_bytes.size() && p.sync_every == 1 && !node_sum; ++k) {
    double start = 0;  // backward time until this bucket is complete, on the target's CPU
    for (size_t i = p.bucket_last_layer[k]; i < p.layers.size(); ++i)
      start += b.backward_s[i] * cpu;
    AllreduceCost c = cost(p.bucket_bytes[k]);
    if (k > 0 && start < group_end) {
      const double before = cost(group_bytes).seconds;
      group_bytes += p.bucket_bytes[k];
      const double after = cost(group_bytes).seconds;
      c.seconds = std::clamp(after - before, 0.0, c.seconds);
      group_end = group_start + after;
    } else {
      group_bytes = p.bucket_bytes[k], group_start = start, group_end = start + c.seconds;
    }
    r.buckets.push_back(c);
    r.comm_s += c.seconds + codec_s(p, net, p.bucket_bytes[k], ranks);
    if (c.seconds <= 0) continue;
    double after = 0;  // backward time left once this bucket is complete
    for (int i = 0; i < p.bucket_last_layer[k]; ++i) after += b.backward_s[i];
    const int tests = p.bucket_last_layer[k];
    r.hidden_s += std::min(after, std::min(tests, c.rounds) * c.seconds / std::max(c.rounds, 1));
  }
  r.hidden_s = std::min(r.hidden_s, backward);
  r.exposed_s = std::max(0.0, r.comm_s - r.hidden_s);
  r.step_s = r.compute_s + r.exposed_s;
  r.samples_per_s = r.step_s > 0 ? p.global_batch / r.step_s : 0;
  char words[256];
  if (r.exposed_s > 0.5 * r.compute_s && p.sync_every > 1) {
    std::snprintf(words, sizeof words,
                  "parameter average (%.1f MiB every %lld steps, %s): %.0f%% of the step",
                  p.param_bytes * p.wire_bytes / 4 / 1048576.0, (long long)p.sync_every,
                  r.buckets.front().how.c_str(), 100 * r.exposed_s / r.step_s);
  } else if (r.exposed_s > 0.5 * r.compute_s) {
    int64_t bytes = 0;
    for (int64_t b : p.bucket_bytes) bytes += b * p.wire_bytes / 4;
    const AllreduceCost whole =
        node_sum ? r.buckets.front() : allreduce_cost(net, bytes, ranks, o.ranks_per_host);
    const double wire = 2.0 * (ranks - 1) / ranks * bytes /
                        (r.hosts > 1 ? net.inter_bandwidth_Bps : net.intra_bandwidth_Bps);
    std::snprintf(words, sizeof words,
                  "allreduce (%.1f MiB in %zu buckets, %s): %.0f%% of the step, %s-bound",
                  bytes / 1048576.0, p.bucket_bytes.size(), whole.how.c_str(),
                  100 * r.exposed_s / r.step_s,
                  wire > 0.5 * whole.seconds ? "bandwidth" : "latency");
  } else if (r.straggler_factor > 1.15) {
    std::snprintf(words, sizeof words,
                  "stragglers: the slowest of %d ranks takes %.2fx the mean step", ranks,
                  r.straggler_factor);
  } else if (r.oversubscribed) {
    std::snprintf(words, sizeof words, "shared cores: %d ranks x %d threads on %.2g cores",
                  std::min(ranks, o.ranks_per_host), p.threads, o.cores_per_host);
  } else {
    std::snprintf(words, sizeof words, "compute (%.0f%% of the step)",
                  100 * r.compute_s / r.step_s);
  }
  r.bottleneck = words;
  return r;
}

}  // namespace hpdl
