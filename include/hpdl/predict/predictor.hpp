// `hpdl predict`: step time of synchronous training at N ranks from a profiled run at a few
// ranks and a network calibration (network.json of `hpdl calibrate`). A step at N ranks is
//   compute  the profiled per-layer forward/backward, data, loss, update and unattributed
//            times (medians), the
//            batch-proportional parts scaled to the local batch B/N (global batch fixed,
//            strong scaling), times the expected slowest of N ranks drawn from the profiled
//            per-step distribution (stragglers), times the core sharing where ranks x threads
//            exceed a host's cores;
//   comm     the allreduce of each gradient bucket (the trainer's own bucket layout) at its
//            size and N, from the calibrated "iallreduce" curve (MPI_Iallreduce polled, as the
//            trainer does; "default" in older files) where it was measured, else the
//            cheapest of recursive doubling, ring and Rabenseifner in the alpha-beta-gamma
//            model with the calibrated inter-host latency, bandwidth and reduction rate;
//   overlap  a bucket starts when its layers' backward is done, but OpenMPI has no progress
//            thread: it advances only inside hpdl's MPI calls, one test per later layer, so
//            at most that many of the algorithm's rounds hide behind the rest of backward.
// Parameter-server runs (downpour, dcasgd) with S servers, W = N - S workers, P bytes of
// parameters: a worker's step is its own profiled compute (each worker has its own batch)
// plus its pulls (P bytes every n_fetch steps) and pushes (P bytes every n_push steps) at
// the calibrated RMA get/accumulate cost of one shard (interpolated in the calibrated
// sizes) times S. Workers do not wait for each other, but share each server: its progress
// engine serves one RMA operation at a time (OpenMPI's passive target over TCP advances at
// the target), W (get/n_fetch + accumulate/n_push) of its time per worker step; its link,
// W (P/S)/n_fetch bytes out and W (P/S)/n_push bytes in per worker step; and its core,
// which applies W (P/S)/n_push floats of accumulates. The step is the largest of these;
// samples/s = W B / step; staleness (server updates between a worker's pull and its push)
// ~ (W - 1)(n_fetch + 1) / (2 n_push).
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
  double step_s = 0, samples_per_s = 0, efficiency = 1;
  std::string bottleneck;
  std::vector<AllreduceCost> buckets;
  int workers = 0;       // parameter server: W
  double staleness = 0;  // parameter server: expected updates between pull and push
};

struct PredictOptions {
  int ranks_per_host = 1;
  double cores_per_host =
      0;  // 0: no core sharing assumed (may be fractional: hosts sharing a machine)
};

// The step at `ranks`: the synchronous model (sync_step.cpp) or, for a parameter-server
// profile, the parameter-server one (ps_step.cpp).
Prediction predict_step(const StepProfile& p, const NetworkModel& net, int ranks,
                        const PredictOptions& o);
Prediction predict_ps_step(const StepProfile& p, const NetworkModel& net, int ranks,
                           const PredictOptions& o);
// E[max of n draws] / mean, for the empirical distribution of `samples`.
double expected_max_factor(std::vector<double> samples, int n);

}  // namespace hpdl
