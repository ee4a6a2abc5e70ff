// The parameter server's checkpoint protocol, worker side and rank 0 side. A worker's
// position is one typed struct, WorkerState, with one encoding (JSON): the same text goes
// over the wire to rank 0 and into the checkpoint's "workers" list. A worker sends its
// state and its named host buffers ("params", then its update rule's state) with two
// named tags; rank 0 stores them as the checkpoint buffers "worker<k>.<name>".
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/train/checkpoint.hpp"

namespace hpdl {

// Where a worker stands and what it has summed, enough to continue exactly.
struct WorkerState {
  int64_t epoch = 1;          // the epoch in progress
  int64_t step_in_epoch = 0;  // its steps already taken
  int64_t step = 0;           // this worker's steps in all
  int64_t pushes_since_pull = 0;
  std::vector<int64_t> pulled_versions;                        // per shard, at the last pull
  std::vector<double> epoch_loss, epoch_samples, epoch_steps;  // per epoch, this worker's
};
// The one encoding: a JSON object keyed by the field names (from_json throws on a missing key).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WorkerState, epoch, step_in_epoch, step, pushes_since_pull,
                                   pulled_versions, epoch_loss, epoch_samples, epoch_steps)

// One host buffer a worker carries in a checkpoint.
struct NamedValues {
  std::string name;
  std::span<float> values;
};

// Worker: sends its state and buffers to rank 0 (which calls gather_workers).
void send_worker(const Comm& comm, const WorkerState& w, const std::vector<NamedValues>& buffers);
// Rank 0: receives every worker's (ranks first_worker..size-1) into c: c.extra["workers"]
// in worker order, buffers "worker<k>.<name>" of n values each. Returns the states.
std::vector<WorkerState> gather_workers(const Comm& comm, int first_worker, int64_t n,
                                        Checkpoint& c);
// Worker k's state from c, its buffers copied into `buffers` (sizes must match); throws
// AgreedError naming what is missing.
WorkerState restore_worker(const Checkpoint& c, int k, const std::vector<NamedValues>& buffers);

}  // namespace hpdl
