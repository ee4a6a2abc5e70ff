// What `hpdl predict` takes from a profiled run directory (manifest.json, config.toml,
// layers.csv, steps.csv): per-layer and per-part medians, the per-step distribution, the
// trainer's gradient buckets, and for parameter-server runs the workers' steps.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hpdl/config/choices.hpp"

namespace hpdl {

// What the predictor takes from a profiled run directory.
struct StepProfile {
  std::string name;
  std::string config_file;  // the config the run was started with (manifest "config")
  int ranks = 1;
  int threads = 1;  // OpenMP threads per rank
  int64_t global_batch = 1, local_batch = 1;
  std::vector<std::string> layers;            // forward order
  std::vector<double> forward_s, backward_s;  // mean per layer, at local_batch
  double data_s = 0, loss_s = 0, update_s = 0;
  double other_s = 0;  // the step's time outside every recorded part (median)
  // Of forward_s, backward_s, data_s and loss_s, the part a call costs whatever its batch
  // (a second profile at another batch measures it: predict/batch_split.hpp); empty and 0:
  // every part in proportion to the batch.
  std::vector<double> forward_call_s, backward_call_s;
  double data_call_s = 0, loss_call_s = 0;
  int64_t call_batch = 0;              // the second profile's local batch (0: none)
  std::vector<double> compute_s;       // per recorded (rank, step): wall minus communication
  std::vector<int64_t> bucket_bytes;   // in the order they start (last layers first)
  std::vector<int> bucket_last_layer;  // the layer whose backward completes each bucket
  // Parameter-server runs: mode downpour or dcasgd (sync otherwise), servers, the
  // pull and push periods in steps, the parameters' bytes, and the workers' median step
  // compute (wall minus pulls and pushes) and pull + push time, at the profile's rank count.
  DistMode mode = DistMode::kSync;
  int servers = 0, n_fetch = 1, n_push = 1;
  int64_t param_bytes = 0;
  double worker_compute_s = 0, worker_rma_s = 0;
  // Synchronous variants (distributed.*): 2 for gradients or changes in 16 bits, else 4
  // bytes a value; local SGD's steps per parameter average (1: every step synchronous).
  int wire_bytes = 4;
  int64_t sync_every = 1;
  // distributed.shared_memory: ranks that all share one host sum f32 gradients through
  // shared memory (after backward) rather than MPI's allreduce.
  bool shared_memory = true;
  OuterStep outer = OuterStep::kAverage;   // local SGD's outer step
  std::optional<OptimizerKind> optimizer;  // the run's optimizer.name (none: unknown)
  int64_t train_samples = 0;               // the run's training split (0: unknown, older manifests)
  // The cores each profiled rank had (manifest "cpu": its host's cgroup quota or cores over
  // the ranks there, at most its affinity); 0: not recorded (older manifests: a full core
  // per thread is assumed).
  double cores_per_rank = 0;
  bool async() const { return mode != DistMode::kSync; }
};

// Error naming the file and field at fault.
StepProfile read_profile(const std::string& run_dir);

}  // namespace hpdl
