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

// Every worker's state in c (its "workers" list); throws AgreedError naming a malformed one.
std::vector<WorkerState> worker_states(const Checkpoint& c);

// The rule for a checkpoint of W workers resumed on another worker count W' (a host lost, or
// one added). Workers train on their own slices of every epoch and stand at different
// places; the slices change with W', so no worker's place carries over. Every new worker
// starts in the epoch of the slowest old worker, as far into its new slice as the slowest
// was into its old one, from the servers' parameters (a pull first). What the old workers
// had summed but not pushed is dropped (at most n_push - 1 local steps each, counted in
// dropped_steps); their per-epoch sums go to worker k mod W'. The servers keep their shards
// and versions, the per-worker state of workers k < min(W, W') and the snapshots of the
// epochs before `epoch`; worker k >= W starts with the rule's initial state.
struct WorkerRedistribution {
  int from_workers = 0, to_workers = 0;
  int64_t epoch = 1;          // the slowest old worker's epoch: every new worker starts in it
  double fraction = 0;        // the share of its slice the slowest had done
  int64_t dropped_steps = 0;  // local steps in changes not pushed, dropped
};
// Whether a parameter-server checkpoint's worker positions carry over to a run of `ranks`
// ranks: written by as many ranks, with every worker it started with (a checkpoint written
// after the servers dropped a worker holds fewer, whose slices were another count's).
// Otherwise the positions are redistributed.
bool positions_carry_over(const Checkpoint& c, int ranks);
// The workers whose positions a parameter-server checkpoint holds (0: none).
int checkpoint_workers(const Checkpoint& c);
// rows, batch: the training split's rows and train.batch (every slice's steps follow them).
WorkerRedistribution redistribution(const Checkpoint& c, int workers, int64_t rows, int64_t batch);
// New worker k's state under r (pulled_versions zero: it pulls before its first step).
WorkerState redistributed_worker(const Checkpoint& c, const WorkerRedistribution& r, int k,
                                 int64_t rows, int64_t batch, int64_t epochs);
// The rule applied, in one line for the run's log.
std::string describe(const WorkerRedistribution& r);

}  // namespace hpdl
