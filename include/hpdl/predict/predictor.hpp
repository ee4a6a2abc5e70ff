// `hpdl predict`: step time of synchronous training at N ranks from a profiled run at a few
// ranks and a network calibration (network.json of `hpdl calibrate`). A step at N ranks is
//   compute  the profiled per-layer forward/backward, data, loss, update and unattributed
//            times (medians), the
//            batch-proportional parts scaled to the local batch B/N (global batch fixed,
//            strong scaling), times the expected slowest of N ranks drawn from the profiled
//            per-step distribution (stragglers), times the CPU a thread had when profiled
//            over the CPU it has on the target hosts (cpu_scale: a budget counted once);
//   comm     the allreduce of each gradient bucket (the trainer's own bucket layout) at its
//            size and N, from the calibrated "iallreduce" curve (MPI_Iallreduce polled, as the
//            trainer does; "default" in older files) where it was measured, else the
//            cheapest of recursive doubling, ring and Rabenseifner in the alpha-beta-gamma
//            model with the calibrated inter-host latency, bandwidth and reduction rate;
//   overlap  a bucket starts when its layers' backward is done, but OpenMPI has no progress
//            thread: it advances only inside hpdl's MPI calls, one test per later layer, so
//            at most that many of the algorithm's rounds hide behind the rest of backward.
// Parameter-server runs (downpour, dcasgd, asynchronous DiLoCo) with S servers, W = N - S
// workers, P bytes of parameters, the served protocol of dist/param_shards.hpp: the W
// workers are customers of a closed queueing network (closed_network.hpp, solved exactly by
// Mean Value Analysis). A worker's cycle (one step) is its own profiled compute (each worker
// has its own batch) plus, per server and pull or push, a request word and the server's
// reply (a latency each), plus its visits to each server's three shared stations: the
// incoming link (a deposit of P/S bytes every n_push steps), the outgoing link (a pulled
// copy every n_fetch steps), both at the calibrated point-to-point latency + P/S /
// bandwidth, and the core (a pass over each deposit, three for DC-ASGD, and a copy per pull,
// at the calibrated reduction rate on the host's share of a core). One worker alone pays
// each station's demand once; many queue at the busiest, whose demand x W then sets the
// step. samples/s = W B / step; staleness (server updates between a worker's pull and its
// push) ~ (W - 1)(n_fetch + 1) / (2 n_push).
#pragma once
#include <string>
#include <vector>

#include "hpdl/predict/comm_cost.hpp"
#include "hpdl/predict/network_model.hpp"
#include "hpdl/predict/step_profile.hpp"

namespace hpdl {

struct Prediction {
  int ranks = 1, hosts = 1;
  bool oversubscribed = false;
  double compute_s = 0, straggler_factor = 1, comm_s = 0, hidden_s = 0, exposed_s = 0;
  // Synchronous steps under a CPU budget: the wait for the last rank's pause beyond the
  // average's (sync_step.cpp), part of compute_s.
  double budget_wait_s = 0;
  double step_s = 0, samples_per_s = 0, efficiency = 1;
  // The forecast's range (predict_with_band): the step with fast compute on fast links, and
  // with slow compute on slow links.
  double step_s_low = 0, step_s_high = 0;
  std::string bottleneck;
  std::vector<AllreduceCost> buckets;
  int workers = 0;       // parameter server: W
  double staleness = 0;  // parameter server: expected updates between pull and push
};

struct PredictOptions {
  int ranks_per_host = 1;
  double cores_per_host =
      0;  // 0: no core sharing assumed (may be fractional: hosts sharing a machine)
  // Synchronous steps under a budget wait for the last rank's pause (budget_wait_s); the
  // range's ends take whole pauses instead (band.cpp).
  bool last_ranks_pause = true;
};

// The step at `ranks`: the synchronous model (sync_step.cpp) or, for a parameter-server
// profile, the parameter-server one (ps_step.cpp).
Prediction predict_step(const StepProfile& p, const NetworkModel& net, int ranks,
                        const PredictOptions& o);
Prediction predict_ps_step(const StepProfile& p, const NetworkModel& net, int ranks,
                           const PredictOptions& o);
// One shard moved between a worker and a server, either way (ps_step.cpp): the calibrated
// point-to-point latency + bytes / bandwidth, between hosts unless every rank shares one.
double ps_shard_transfer_s(const StepProfile& p, const NetworkModel& net, int ranks,
                           const PredictOptions& o);
// What a transfer of `move` s costs a parameter-server worker on a budget of q < 1 core run
// in slices of `slice` s, beyond the transfer itself, where the calibration did not measure
// a transfer's CPU (ps_step.cpp).
double budget_charge_s(double move, double slice, double q);
// predict_step, with its range: the step predicted again with the profile's compute at
// the 5th and 95th percentiles of its recorded steps (relative to their median) and every
// link's latency and bandwidth time at the calibration's fast and slow ends
// (NetworkModel::fast_links, slow_links) -- fast with fast, slow with slow. Where a thread
// has less than a core and the calibration saw its slices (NetworkModel::cpu_slice_s), two
// more: a single step meets one pause of the budget fewer (fast end) or one more (slow end)
// than its average, and a parameter-server worker's transfers, which the forecast charges to
// its budget (ps_step.cpp), are left unthrottled at the fast end. A measured step should
// fall inside it.
Prediction predict_with_band(const StepProfile& p, const NetworkModel& net, int ranks,
                             const PredictOptions& o);
// What the profiled compute is multiplied by on the target hosts: the CPU a thread had when
// profiled (StepProfile::cores_per_rank / threads, at most a core; a whole core where not
// recorded) over the CPU a thread has there (cores_per_host over the on_host ranks' threads,
// at most a core; a whole core where cores_per_host is 0). So a budget is counted once: a
// profile taken on a host of half a core, forecast for hosts of half a core, is not slowed
// again. `shared` is set where a target thread has less than a core.
double cpu_scale(const StepProfile& p, const PredictOptions& o, int on_host, bool& shared);
// The share of a core a thread has on the target hosts (at most 1).
double thread_share(const StepProfile& p, const PredictOptions& o, int on_host);
// E[max of n draws] / mean, for the empirical distribution of `samples`.
double expected_max_factor(std::vector<double> samples, int n);

}  // namespace hpdl
