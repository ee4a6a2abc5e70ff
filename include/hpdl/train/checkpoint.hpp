// A run's state between two steps, as checkpoint.h5 holds it: what identifies the run
// (a checkpoint resumes only the same model; a parameter server's only on the same rank
// layout, a synchronous run's on any rank count that splits its batch), where training
// stands (epoch, step within it, global step, the epochs already done), and the state
// itself (parameters, named float buffers such as the optimizer's moments, named int64
// counters). Random numbers are counter-based functions of (seed, step), so the seed and
// the global step are the whole RNG state; the data order is a function of (seed, epoch),
// so the epoch and the step within it are the whole data cursor.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/nn/model.hpp"
#include "hpdl/train/epoch_stats.hpp"

namespace hpdl {

// Identity and position: the file's "header" attribute, a JSON object keyed by these
// fields' names (written and read through the type mapping below, nothing hand-copied).
struct CheckpointHeader {
  // Identity.
  std::string model;  // every parameter tensor as name:size, joined by ';'
  std::string mode, optimizer;
  int64_t ranks = 0, servers = 0, batch = 0;
  uint64_t seed = 0;
  // Position.
  int64_t epoch = 1;          // the epoch in progress
  int64_t epoch_step = 0;     // its steps already taken
  int64_t global_step = 0;    // steps taken in all
  double epoch_loss_sum = 0;  // summed training loss of those steps, all ranks
  double epoch_s = 0;         // seconds spent in the epoch so far
  double elapsed_s = 0;       // wall time since the start, evaluations included
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CheckpointHeader, model, mode, optimizer, ranks, servers, batch,
                                   seed, epoch, epoch_step, global_step, epoch_loss_sum, epoch_s,
                                   elapsed_s)

struct Checkpoint : CheckpointHeader {
  std::string config;  // the resolved config (TOML) that built the model, for `hpdl eval`
  std::string plan;  // the model's execution plan (ExecutionPlan::serialise; "" before it was kept)
  std::vector<EpochStats> history;
  // State.
  std::vector<float> params;
  std::vector<std::pair<std::string, std::vector<float>>> buffers;
  std::vector<std::pair<std::string, std::vector<int64_t>>> counters;
  nlohmann::json extra;  // small structured state (parameter-server workers' positions)

  const std::vector<float>* buffer(const std::string& name) const;
  const std::vector<int64_t>* counter(const std::string& name) const;
};

// distributed.virtual_shards of the run that wrote c (0: off, or a file from before it).
int64_t virtual_shards(const Checkpoint& c);
// This run's identity fields (position and state left empty).
Checkpoint checkpoint_identity(const Config& cfg, const Model& model, int ranks);
// Error naming PATH and the first identity field in which `found` differs from `expected`.
// A synchronous checkpoint may differ in its rank count, unless it holds per-rank state.
void check_compatible(const Checkpoint& found, const Checkpoint& expected, const std::string& path);

// Writes PATH.tmp, fsyncs and renames it over PATH; the checkpoint it replaces is kept as
// previous_checkpoint(PATH). Returns the bytes written.
uint64_t write_checkpoint(const std::string& path, const Checkpoint& c);
// Error naming PATH if it is missing, truncated or not an hpdl checkpoint.
Checkpoint read_checkpoint(const std::string& path);
// checkpoint.h5 -> checkpoint.prev.h5
std::string previous_checkpoint(const std::string& path);

// Collective: rank 0's checkpoint on every rank.
void broadcast_checkpoint(const Comm& comm, Checkpoint& c);

}  // namespace hpdl
