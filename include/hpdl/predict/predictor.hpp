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
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hpdl {

// What the predictor takes from a profiled run directory.
struct StepProfile {
  std::string name;
  int ranks = 1;
  int threads = 1;  // OpenMP threads per rank
  int64_t global_batch = 1, local_batch = 1;
  std::vector<std::string> layers;            // forward order
  std::vector<double> forward_s, backward_s;  // mean per layer, at local_batch
  double data_s = 0, loss_s = 0, update_s = 0;
  double other_s = 0;                  // the step's time outside every recorded part (median)
  std::vector<double> compute_s;       // per recorded (rank, step): wall minus communication
  std::vector<int64_t> bucket_bytes;   // in the order they start (last layers first)
  std::vector<int> bucket_last_layer;  // the layer whose backward completes each bucket
  // Parameter-server runs: mode "downpour" | "dcasgd" ("sync" otherwise), servers, the
  // pull and push periods in steps, the parameters' bytes, and the workers' median step
  // compute (wall minus pulls and pushes) and pull + push time, at the profile's rank count.
  std::string mode = "sync";
  int servers = 0, n_fetch = 1, n_push = 1;
  int64_t param_bytes = 0;
  double worker_compute_s = 0, worker_rma_s = 0;
  bool async() const { return mode != "sync"; }
};

// The network as calibrated: inter- and intra-host point-to-point fits, reduction rate, and
// the measured allreduce "default" curves per rank count.
struct NetworkModel {
  double inter_latency_s = 0, inter_bandwidth_Bps = 0;
  double intra_latency_s = 0, intra_bandwidth_Bps = 0;
  double reduce_Bps = 0;
  // The cores a host's ranks got together while all computed (median over hosts; 0 when
  // the calibration predates the measurement): a CPU budget per host shows here.
  double cores_per_host = 0;
  struct Curve {
    int ranks = 0;
    std::vector<std::pair<int64_t, double>> samples;  // bytes, seconds
  };
  std::vector<Curve> measured;  // algorithm "default"
  // RMA operations as calibrated (lock, operation, unlock; the median over origin/target
  // pairs per size): bytes, seconds. Empty when not calibrated: then the inter-host
  // point-to-point fit stands in.
  std::vector<std::pair<int64_t, double>> get_samples, acc_samples;
};

// Error naming the file and field at fault.
NetworkModel read_network(const std::string& path);
StepProfile read_profile(const std::string& run_dir);

struct AllreduceCost {
  double seconds = 0;
  int rounds = 1;
  std::string how;  // "measured" or the analytic algorithm
};
AllreduceCost allreduce_cost(const NetworkModel& net, int64_t bytes, int ranks, int ranks_per_host);

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

Prediction predict_step(const StepProfile& p, const NetworkModel& net, int ranks,
                        const PredictOptions& o);
// E[max of n draws] / mean, for the empirical distribution of `samples`.
double expected_max_factor(std::vector<double> samples, int n);

// The table, a CSV, an SVG plot and a predicted Chrome trace of one step at `trace_ranks`.
std::string prediction_table(const StepProfile& p, const std::vector<Prediction>& rows);
std::string prediction_csv(const std::vector<Prediction>& rows);
std::string prediction_svg(const std::vector<Prediction>& rows);
nlohmann::json predicted_trace(const StepProfile& p, const Prediction& at);

}  // namespace hpdl
