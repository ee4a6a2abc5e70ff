// The parameter server's checkpoint protocol: workers, servers and rank 0. A worker's
// position is one typed struct, WorkerState, with one encoding (JSON): the same text goes
// over the wire to rank 0 and into the checkpoint's "workers" list. A worker sends its
// state and its named host buffers ("params") with two named tags; rank 0 stores them as
// the checkpoint buffers "worker<k>.<name>". A server sends its version and named slices
// of full-length vectors (its shard as "params", and per worker the rule's state it keeps,
// "worker<k>.w_bak", "worker<k>.mean_square"); rank 0 places every server's slices.
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
  // Steps summed into the change not yet pushed; a checkpoint carries that change as the
  // buffer "worker<k>.pending" when this is > 0, so a pause for a checkpoint pushes nothing
  // early and a resumed run continues exactly where it stood.
  int64_t pending_steps = 0;
  std::vector<int64_t> pulled_versions;                        // per shard, at the last pull
  std::vector<double> epoch_loss, epoch_samples, epoch_steps;  // per epoch, this worker's
};
// The one encoding: a JSON object keyed by the field names. from_json throws on a missing
// key, except pending_steps (0 when absent: checkpoints written before it was kept).
void to_json(nlohmann::json& j, const WorkerState& w);
void from_json(const nlohmann::json& j, WorkerState& w);

// One host buffer a worker carries in a checkpoint.
struct NamedValues {
  std::string name;
  std::span<float> values;
};

// "worker<k>": the prefix of worker k's buffers.
std::string worker_key(int k);

// Worker: sends its state and buffers to rank 0 (which calls gather_workers).
void send_worker(const Comm& comm, const WorkerState& w, const std::vector<NamedValues>& buffers);
// Rank 0: receives every worker's (ranks first_worker..size-1) into c: c.extra["workers"]
// in worker order, buffers "worker<k>.<name>" of n values each. Returns the states.
std::vector<WorkerState> gather_workers(const Comm& comm, int first_worker, int64_t n,
                                        Checkpoint& c);
// Worker k's state from c, its buffers copied into `buffers` (sizes must match); throws
// AgreedError naming what is missing.
WorkerState restore_worker(const Checkpoint& c, int k, const std::vector<NamedValues>& buffers);

// Server 1..S-1: sends its shard's version and its slices (each the part [first, first+n)
// of a full-length vector, "params" for the shard) to rank 0.
void send_shard(const Comm& comm, int64_t version, const std::vector<NamedValues>& slices);
// Rank 0: places its own slices and every other server's into c (the shard of server s
// starts at begin[s]; "params" into c.params, others into full-length buffers of n values)
// and returns every shard's version.
std::vector<int64_t> gather_shards(const Comm& comm, std::span<const int64_t> begin, int64_t n,
                                   int64_t own_version, const std::vector<NamedValues>& own,
                                   Checkpoint& c);
// A server's slices, starting at `first`, from c's full-length vectors; throws AgreedError
// naming a missing or short one.
void restore_shard(const Checkpoint& c, int64_t first, const std::vector<NamedValues>& slices);

}  // namespace hpdl
