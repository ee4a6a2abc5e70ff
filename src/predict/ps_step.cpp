// The parameter-server step model of `hpdl predict` (see predictor.hpp): the served protocol
// of dist/param_shards.hpp as a closed queueing network (closed_network.hpp).
#include <algorithm>
#include <cmath>

#include "hpdl/predict/closed_network.hpp"
#include "hpdl/predict/predictor.hpp"

namespace hpdl {

double ps_shard_transfer_s(const StepProfile& p, const NetworkModel& net, int ranks,
                           const PredictOptions& o) {
  const bool one_host = (ranks + o.ranks_per_host - 1) / o.ranks_per_host <= 1;
  const double latency = one_host ? net.intra_latency_s : net.inter_latency_s;
  const double bandwidth = one_host ? net.intra_bandwidth_Bps : net.inter_bandwidth_Bps;
  return latency + double(p.param_bytes) / std::max(p.servers, 1) / bandwidth;
}

// A worker on a budget of q < 1 core, run in slices of `slice` s: the wall time a transfer
// of `move` s costs it beyond the transfer, for calibrations that did not measure a
// transfer's CPU (predict_ps_step charges that CPU's pauses where they did). A transfer of
// up to a slice needs the worker's CPU throughout: started at a uniform point of a slice,
// it meets the slice's end with probability move / slice and then waits a pause of
// slice (1/q - 1), so it costs move / q on average. A transfer of several slices is mostly
// the link's (the kernel moves its bytes while the worker is paused), and its charge falls
// as slice^2 / move, continuous at one slice. It fitted one CPU and missed the next
// (docs/results.md, "A parameter-server transfer on a budget costs the pauses of its CPU").
double budget_charge_s(double move, double slice, double q) {
  if (move <= 0 || slice <= 0 || q >= 1) return 0;
  return (1 / q - 1) * std::min(move, slice * slice / move);
}

Prediction predict_ps_step(const StepProfile& p, const NetworkModel& net, int ranks,
                           const PredictOptions& o) {
  Prediction r;
  r.ranks = ranks;
  r.hosts = (ranks + o.ranks_per_host - 1) / o.ranks_per_host;
  r.workers = std::max(ranks - p.servers, 0);
  if (r.workers == 0) {
    r.bottleneck =
        "no worker: " + std::to_string(ranks) + " ranks, " + std::to_string(p.servers) + " servers";
    return r;
  }
  r.compute_s = p.worker_compute_s;
  r.compute_s *= cpu_scale(p, o, std::min(ranks, o.ranks_per_host), r.oversubscribed);
  const int S = p.servers;
  const double shard = double(p.param_bytes) / S;
  // Moving a shard between a worker and a server, either way, costs what the calibrated
  // point-to-point fit says (latency + bytes / bandwidth, inter-host unless every rank shares
  // one host): the server is inside MPI all the time, so a transfer runs as a two-sided one
  // does. A control word (the request, the server's reply) costs the latency. (The
  // calibrated RMA curves are not used: under a CPU budget their small operations measured
  // 0.1 ms in one calibration and 20 ms in the next on the same cluster.)
  const double move = ps_shard_transfer_s(p, net, ranks, o);
  const double word = r.hosts <= 1 ? net.intra_latency_s : net.inter_latency_s;
  // The server's core: one pass over the deposited shard per push (two more for DC-ASGD's
  // compensation and mean squares), one copy per pull, at the calibrated reduction rate on
  // the server's share of a core.
  const double core_share = o.cores_per_host > 0 ? std::min(1.0, o.cores_per_host) : 1.0;
  const double passes = p.mode == DistMode::kDcAsgd ? 3.0 : 1.0;
  double core = shard * (passes / p.n_push + 1.0 / p.n_fetch) / (net.reduce_Bps * core_share);
  // The worker's own part of a cycle: its compute and, per operation and server, a request
  // word and the server's reply.
  const double transfers = 1.0 / p.n_fetch + 1.0 / p.n_push;  // per server and worker step
  double think = r.compute_s + S * 2 * word * transfers;
  // On a CPU budget of q < 1 core whose pauses the calibration saw, each transfer also costs
  // the pauses it brings on. Where the calibration measured a transfer's CPU at each end (c),
  // by it: a CPU second spent on a budget costs 1/q - 1 seconds of pause on average, the
  // worker's in its own cycle, the server's at its core (a paused server holds up the worker
  // it serves, and queues the others). Else by the transfer's time (budget_charge_s).
  const double q = thread_share(p, o, std::min(ranks, o.ranks_per_host));
  const double cpu = transfer_cpu_s(net, static_cast<int64_t>(shard));
  if (cpu >= 0 && net.cpu_slice_s > 0) {
    think += S * transfers * cpu * (1 / q - 1);
    core += transfers * cpu * (1 / core_share - 1);
  } else {
    think += S * transfers * budget_charge_s(move, net.cpu_slice_s, q);
  }
  // Per worker step, each server is three stations: its incoming link (the deposits), its
  // outgoing link (the pulled copies) and its core. A worker visits every server's.
  std::vector<double> demand;
  for (int s = 0; s < S; ++s) {
    demand.push_back(move / p.n_push);   // incoming link
    demand.push_back(move / p.n_fetch);  // outgoing link
    demand.push_back(core);
  }
  const ClosedNetwork alone = solve_closed_network(demand, think, 1);
  const ClosedNetwork all = solve_closed_network(demand, think, r.workers);
  r.step_s = all.cycle_s;
  r.comm_s = alone.cycle_s - r.compute_s;
  r.exposed_s = r.step_s - r.compute_s;
  r.samples_per_s = r.workers * p.global_batch / r.step_s;
  r.staleness = (r.workers - 1) * (p.n_fetch + 1) / (2.0 * p.n_push);
  // The bottleneck: the busiest station when the workers queue (the cycle grew by a quarter
  // or more over one worker's), else the worker's own time.
  const size_t busiest = static_cast<size_t>(
      std::max_element(all.utilization.begin(), all.utilization.end()) - all.utilization.begin());
  static const char* kStation[] = {"incoming link (pushes)", "outgoing link (pulls)", "core"};
  char words[256];
  if (all.cycle_s > 1.25 * alone.cycle_s)
    std::snprintf(words, sizeof words,
                  "server %s: %d workers queue (%.0f%% busy; a step %.1fx one worker's alone)",
                  kStation[busiest % 3], r.workers, 100 * all.utilization[busiest],
                  all.cycle_s / alone.cycle_s);
  else if (r.comm_s > 0.5 * r.compute_s)
    std::snprintf(words, sizeof words, "pulls and pushes (%.0f%% of a worker's step)",
                  100 * (r.step_s - r.compute_s) / r.step_s);
  else
    std::snprintf(words, sizeof words, "worker compute (%.0f%% of the step)",
                  100 * r.compute_s / r.step_s);
  r.bottleneck = words;
  return r;
}

}  // namespace hpdl
