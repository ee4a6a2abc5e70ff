// The parameter server's memory. The flat parameter vector is split into S contiguous,
// balanced shards; rank s < S exposes shard s in an MPI window (MPI_Win_allocate) behind a
// small header of int64 counters. Workers reach the shards only with one-sided operations
// under passive-target locks, so a server never posts a receive:
//   pull        shared lock; MPI_Get_accumulate(MPI_NO_OP) of the shard and its version
//               (atomic against concurrent Downpour accumulates, as MPI-3 defines it)
//   push_sum    shared lock; MPI_Accumulate(MPI_SUM) of the update, MPI_Fetch_and_op(+1)
//               of the version, which returns the version before this push
//   push_rmw    exclusive lock; get the shard and version, flush, compute, MPI_Put, +1
//               (DC-ASGD's read-modify-write, atomic against every other worker)
// Counters live in every server's header: kVersion (pushes applied to this shard),
// kWorkersDone, kWorkerEpochs. Servers call poll() in their loop, which drives MPI
// progress for components that need the target's help (osc pt2pt).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/profile/profiler.hpp"

namespace hpdl {

// Where a worker's time in the parameter server went, and how stale its pushes were.
struct RmaStats {
  int64_t pulls = 0, pushes = 0;
  double pull_s = 0, push_s = 0;   // whole operations, lock waits included
  double lock_wait_s = 0;          // inside MPI_Win_lock
  std::vector<int64_t> staleness;  // staleness[tau] = pushes with that staleness
  void record_staleness(int64_t tau);
};

// Mean and 95th percentile of a staleness histogram (hist[tau] = pushes).
struct StalenessSummary {
  int64_t pushes = 0, p95 = 0;
  double mean = 0;
};
StalenessSummary summarize_staleness(const std::vector<int64_t>& hist);

class ParamShards {
 public:
  // kVersion..kWorkerEpochs on every server; the checkpoint handshake uses server 0's:
  // kRequest (checkpoints requested so far), kPaused (workers waiting in the current one),
  // kStop (a requested checkpoint ends the run), kSignals (stop signals seen by other ranks),
  // kFinish (all workers done: no more checkpoints, servers may leave).
  enum Counter : int {
    kVersion = 0,
    kWorkersDone = 1,
    kWorkerEpochs = 2,
    kRequest = 3,
    kPaused = 4,
    kStop = 5,
    kSignals = 6,
    kFinish = 7,
    // Server 0, for the live progress: worker steps, and the staleness summed over pushes,
    // both added by each worker at the end of each of its epochs (since this process began).
    kWorkerSteps = 8,
    kStalenessSum = 9,
    kStalenessPushes = 10,
    kCounters = 11
  };

  // Collective over comm. Ranks 0..servers-1 allocate and fill their shard from `initial`
  // (the same on every rank); the others allocate empty windows.
  ParamShards(const Comm& comm, int servers, std::span<const float> initial);
  ~ParamShards();  // frees nothing collective: call close() on every rank
  ParamShards(const ParamShards&) = delete;
  ParamShards& operator=(const ParamShards&) = delete;
  // Collective: frees the windows.
  void close();

  int servers() const { return servers_; }
  bool is_server() const { return comm_.rank() < servers_; }
  int64_t shard_begin(int s) const { return begin_[s]; }
  int64_t shard_size(int s) const { return begin_[s + 1] - begin_[s]; }

  // Copies every shard into params; versions[s] = shard s's version at that moment.
  void pull(std::span<float> params, std::span<int64_t> versions, RmaStats& st);
  // Adds update to every shard; prev[s] = shard s's version before this push.
  void push_sum(std::span<const float> update, std::span<int64_t> prev, RmaStats& st);
  // For every shard: under an exclusive lock, update(values, first, n) rewrites the shard's
  // current values in place (they are params[first, first+n)); then they are written back.
  using ShardUpdate = std::function<void(float* values, int64_t first, int64_t n)>;
  void push_rmw(const ShardUpdate& update, std::span<int64_t> prev, RmaStats& st);

  void add(int server, Counter c, int64_t v);
  int64_t read(int server, Counter c);
  // A server sets a counter of its own window (resuming, before training starts).
  void set_own(Counter c, int64_t v);
  // Server loop: lets MPI make progress on incoming one-sided operations.
  void poll();
  // Times lock waits and flushes (nested inside a pull or push). Null: off.
  void set_profiler(Profiler* p);

 private:
  static constexpr MPI_Aint kHeader = 128;  // bytes of counters before the floats
  static_assert(kCounters * sizeof(int64_t) <= kHeader);
  double lock(int lock_type, int s, RmaStats* st);

  const Comm& comm_;
  int servers_;
  std::vector<int64_t> begin_;  // shard s is [begin_[s], begin_[s+1])
  std::vector<MPI_Win> wins_;
  std::vector<float> scratch_;  // push_rmw's copy of a shard
  bool closed_ = false;
  Profiler* prof_ = nullptr;
  int32_t lock_name_ = 0, flush_name_ = 0;
};

}  // namespace hpdl
