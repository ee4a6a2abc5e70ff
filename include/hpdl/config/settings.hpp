// The typed settings of a run, one struct per config section, with their defaults. Plain
// data: no TOML, so every subsystem may take its own section without seeing the parser;
// config/config.hpp reads them from a file.
#pragma once
#include <cstdint>
#include <string>

#include "hpdl/config/choices.hpp"

namespace hpdl {

// What run.kernels forces on the kernels (choices.hpp). Read by config.
struct KernelChoices {
  GemmChoice gemm = GemmChoice::kAuto;
  ConvLayoutChoice conv_layout = ConvLayoutChoice::kAuto;
  ConvIsaChoice conv_isa = ConvIsaChoice::kAuto;
  bool plain_activations = false;  // every activation plain NCHW (no kept layouts)
  PoolChoice pool = PoolChoice::kAuto;
  bool cuda_graphs = true;         // the CUDA backend replays recorded graphs
  bool cuda_lstm_sequence = true;  // the CUDA LSTM runs its steps as one kernel
  bool operator==(const KernelChoices&) const = default;
};

struct RunConfig {
  std::string name;                    // output directory name; "" = config file stem
  std::string output_dir = "outputs";  // parent of run directories
  bool overwrite = false;              // replace a completed run of the same name
  // The one device choice: "onednn" | "reference" (CPU) | "cuda" (GPU). The config key
  // run.device = "gpu" | "cpu" is a shorthand that sets it.
  Backend backend = Backend::kOneDnn;
  double watchdog_s = 600;  // bound on any wait for other ranks; 0 = off
  // How a rank waits for others (comm/comm.hpp's IdlePolicy): "spin" (test back to back),
  // "sleep" (after 100 us of tests, sleep between them), "auto" (sleep where this host's
  // CPU is budgeted by a cgroup quota or its ranks' threads outnumber its cores, else spin).
  WaitChoice wait = WaitChoice::kAuto;
  // "f32" | "bf16": the arithmetic of dense and conv layers (kernels.hpp, Precision); bf16
  // only on the onednn backend on a CPU with AVX512_BF16 or AMX-BF16.
  Precision precision = Precision::kF32;
  KernelChoices kernels;  // run.kernels
  bool on_gpu() const { return backend == Backend::kCuda; }
  bool operator==(const RunConfig&) const = default;
};

struct DataConfig {
  std::string train_file, train_group = "/";  // HDF5 file and group holding x and y
  std::string test_file, test_group = "/";    // test split ("" = no evaluation)
  bool normalize = false;  // standardise channels with the file's x.mean / x.std attributes
  // A validation split: a fraction of the training file's rows (chosen by train.seed, never
  // trained on), or a file of its own; not both. Evaluated after every epoch.
  double validation_fraction = 0.0;
  std::string validation_file, validation_group = "/";
  bool has_validation() const { return validation_fraction > 0 || !validation_file.empty(); }
  bool operator==(const DataConfig&) const = default;
};

struct OptimizerConfig {
  OptimizerKind name = OptimizerKind::kSgd;
  double lr = 0.01;
  double momentum = 0.0;                          // SGD
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam
  double l2 = 0.0;                                // L2 penalty on weights (not biases)
  double clip_norm = 0.0;                         // clip gradients to this global norm; 0 = off
  // Learning-rate schedule (optim/lr_schedule.hpp): "constant" | "step" | "exponential" |
  // "cosine", with a linear warm-up over the first warmup_steps updates.
  Schedule schedule = Schedule::kConstant;
  int64_t decay_epochs = 10;  // step: decay every this many epochs
  double decay_factor = 0.1;  // step, exponential: multiply by this per decay
  double min_lr = 0.0;        // cosine: the floor
  int64_t warmup_steps = 0;   // 0 = no warm-up
  bool operator==(const OptimizerConfig&) const = default;
};

struct TrainConfig {
  int64_t batch = 64;  // global batch, split across ranks
  int64_t epochs = 1;
  int64_t max_steps = 0;  // stop after this many steps in total; 0 = no limit
  uint64_t seed = 1;
  bool progress = true;  // live progress line on a terminal
  // A step whose gradient holds NaN/Inf: "stop" (end the run naming step, layer, rank;
  // nothing non-finite is ever applied or checkpointed) or "skip" (no update; counted).
  NonFinite nonfinite = NonFinite::kStop;
  // The model a run ends with: "last" (after the last epoch) or "best" (the epoch with the
  // best validation `keep_metric`); the test split is then evaluated once, on it.
  Keep keep = Keep::kLast;
  KeepMetric keep_metric = KeepMetric::kValLoss;
  int64_t patience = 0;  // stop after this many epochs without a better keep_metric; 0 = off
  bool operator==(const TrainConfig&) const = default;
};

struct DistributedConfig {
  DistMode mode = DistMode::kSync;
  double bucket_mb = 0.25;  // sync: gradient allreduce bucket size (MiB); buckets overlap backward
  // Sync: when every rank shares one node, sum the f32 gradients through a shared-memory
  // window (dist/grad_reducer.hpp) rather than MPI's allreduce.
  bool shared_memory = true;
  // Sync: what travels in 16 bits with error feedback ("bf16" | "fp16"; "none": f32): the
  // gradient buckets, or with sync_every > 1 the parameter changes.
  Compression compression = Compression::kNone;
  // Sync: local SGD, H local steps between parameter averages (1: every step synchronous),
  // after local_warmup_steps synchronous steps; the outer step "average" or "nesterov"
  // (DiLoCo) with outer_lr and outer_momentum.
  int64_t sync_every = 1;
  int64_t local_warmup_steps = 0;
  OuterStep outer = OuterStep::kAverage;
  double outer_lr = 0.7;
  double outer_momentum = 0.9;
  // Parameter-server modes: ranks 0..servers-1 hold the shards, the others are workers.
  int64_t servers = 1;
  int64_t n_fetch = 1;       // a worker pulls the parameters every n_fetch steps
  int64_t n_push = 1;        // and pushes its accumulated gradient every n_push steps
  double dc_lambda = 0.04;   // DC-ASGD: constant lambda
  bool dc_adaptive = false;  // DC-ASGD: lambda_t = dc_lambda0 / sqrt(MS_t + eps) per element
  double dc_lambda0 = 2.0;
  double dc_ms_decay = 0.95;  // m in MS_t = m * MS_{t-1} + (1 - m) * g^2
  double dc_eps = 1e-7;
  double poll_us = 50;  // servers: pause between progress polls
  // Parameter-server modes: a worker silent for half of run.watchdog_s is dropped and the
  // run goes on with the others (launched with mpirun --enable-recovery); it ends when fewer
  // than min_workers are left.
  int64_t min_workers = 1;
  // Sync: the global batch as K fixed shards of train.batch / K rows whose gradients are
  // summed in shard order (Comm::ordered_sum), so every rank count dividing K computes the
  // same bits (0: off, each rank's gradient summed by MPI).
  int64_t virtual_shards = 0;
  bool async() const { return mode != DistMode::kSync; }
  bool operator==(const DistributedConfig&) const = default;
};

// Per-layer tracing on the schedule of the framework profilers: after `skip` steps, cycles
// of `warmup` unrecorded and `active` recorded steps, `repeat` times (0 = to the end).
struct ProfileConfig {
  bool enabled = false;
  int64_t skip = 0;
  int64_t warmup = 1;
  int64_t active = 20;
  int64_t repeat = 1;
  // After the run: each rank's GEMM peak and memory bandwidth measured through its backend
  // (about a second), and each layer's efficiency against them in efficiency.csv.
  bool ceilings = true;
  bool operator==(const ProfileConfig&) const = default;
};

// Checkpoints (checkpoint.h5 in the run directory, the one before kept as
// checkpoint.prev.h5): every `every_steps` steps, every `every_s` seconds (rank 0's clock),
// and, with on_signal, when SIGUSR1 or SIGTERM arrives, after which the run stops (exit 75).
struct CheckpointConfig {
  int64_t every_steps = 0;  // 0 = off
  double every_s = 0;       // 0 = off
  bool on_signal = true;
  bool operator==(const CheckpointConfig&) const = default;
};

}  // namespace hpdl
