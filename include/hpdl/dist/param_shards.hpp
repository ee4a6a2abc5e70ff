// The parameter server's memory and protocol. The flat parameter vector is split into S
// contiguous, balanced shards; server rank s < S owns shard s in a window (MPI_Win_allocate)
// laid out as
//   header    kCounters int64 counters (below)
//   control   per reader r, kControl int64 words (pull_req, push_seq, push_lr, and on
//             server 0 the worker's state and checkpoint pauses: see drop()); readers
//             are the workers 0..W-1 (rank S + r) and reader W, rank 0, which snapshots
//             the other servers' shards
//   shard     the parameters, written by the server only
//   pulled[r] per reader: the shard as the server copied it for r's last pull; for worker
//             r this is exactly DC-ASGD's w_bak
//   pushed[r] per worker: r's gradient sum as deposited by its last push
// No rank ever takes an exclusive lock once training runs (every operation is a short
// shared-lock epoch), and the server applies every update itself, so each request is served
// by the next turn of the server's loop, in bounded time:
//   push   worker: put g into pushed[r] and lr into push_lr (complete at the server), then
//          push_seq += 1; wait for the server's reply: the shard's version before this push
//   pull   worker: pull_req += 1; wait for the server's reply (the version it copied), then
//          get pulled[r]
//   serve  server loop: for each reader, apply its deposited push through the rule, then
//          copy the shard into pulled[r] for a requested pull, answering each with a small
//          message (the server never posts a receive; a waiting reader polls only its own
//          receive, so waiting costs the server nothing). The loop is inside MPI all the
//          time, which drives progress for components that need the target (osc pt2pt).
// Others touch control words and counters only with MPI atomics, the owning server with
// atomic loads and stores; the float areas change hands through them and the replies (the
// deposit is complete before its word changes; the server's copy before its reply).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/profile/profiler.hpp"

namespace hpdl {

// Where a worker's time in the parameter server went, and how stale its pushes were.
struct RmaStats {
  int64_t pulls = 0, pushes = 0;
  double pull_s = 0, push_s = 0;   // whole operations, waits for the server included
  double server_wait_s = 0;        // waiting for the server to serve a deposited request
  double max_push_s = 0;           // the longest single push
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
    kVersion = 0,  // pushes applied to this shard (written by its server only)
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
    // Server 0: workers dropped so far (see drop()); checkpoints whose pause is complete
    // (every live worker paused: the ranks that take part are settled).
    kGone = 11,
    kPauseComplete = 12,
    kCounters = 13
  };

  // What a server does with a deposited push of worker `worker`: update the n values of its
  // shard w from the gradient sum g at rate lr; bak is what this worker last pulled of the
  // shard (its w_bak).
  using Apply = std::function<void(int worker, const float* g, float lr, float* w, const float* bak,
                                   int64_t n)>;

  // Collective over comm. Ranks 0..servers-1 allocate and fill their shard from `initial`
  // (the same on every rank) and the copies their readers pull; the others allocate empty
  // windows. Then call open() on every rank (after any set_own).
  ParamShards(const Comm& comm, int servers, std::span<const float> initial);
  ~ParamShards();  // frees nothing collective: call close() on every rank
  ParamShards(const ParamShards&) = delete;
  ParamShards& operator=(const ParamShards&) = delete;
  // Local: training starts (after any set_own); call on every rank.
  void open();
  // Collective: waits for the last replies and frees the windows. After a worker was
  // dropped (its process may be gone) nothing is freed: the windows end with the process.
  void close();

  int servers() const { return servers_; }
  int workers() const { return workers_; }
  bool is_server() const { return rank_ < servers_; }
  int64_t shard_begin(int s) const { return begin_[s]; }
  int64_t shard_size(int s) const { return begin_[s + 1] - begin_[s]; }

  // ---- workers (and rank 0 for snapshots) ----
  // Copies every shard into params; versions[s] = shard s's version at that moment. Rank 0
  // copies its own shard directly; its pulls of the others' are snapshots.
  void pull(std::span<float> params, std::span<int64_t> versions, RmaStats& st);
  // Deposits the gradient sum g at rate lr with every server and waits until each has
  // applied it; prev[s] = shard s's version before this push. Workers only.
  void push(std::span<const float> g, float lr, std::span<int64_t> prev, RmaStats& st);

  // ---- servers ----
  // One turn of the server loop: applies every deposited push through `apply`, in reader
  // order, and serves every requested pull. Returns the requests served.
  int64_t serve(const Apply& apply);
  std::span<float> own_shard();              // this server's shard
  std::span<float> pulled_copy(int reader);  // what reader last pulled of this shard
  int64_t own_version() const { return version_; }
  int64_t applied(int worker) const { return applied_pushes_[worker]; }  // pushes applied

  // ---- workers that leave (server 0 decides; every rank can ask) ----
  // Worker w's own words on server 0: its activity (requests made, epochs counted, done),
  // read by server 0 to tell a silent worker from a working one.
  struct WorkerWords {
    int64_t requests = 0, epochs = 0, pauses = 0;
    bool done = false, gone = false;
  };
  WorkerWords worker_words(int worker);  // server 0
  // A worker counts n epochs (those done before a resume too), or itself done, in its
  // words on server 0.
  void count_epochs_of_mine(int64_t n);
  void count_done_of_mine();
  void count_pause_of_mine();
  // A server stops serving `worker`, and answers anything it still asks with "leave"
  // (await_reply then throws LeftJob); server 0 also marks it gone for every rank to read.
  void drop(int worker);
  // Any rank: the workers server 0 has dropped, in order; a worker: whether it is one.
  std::vector<int> gone_workers();
  bool dropped_me();
  // What a dropped worker throws when it learns so.
  static LeftJob dropped_error();

  void add(int server, Counter c, int64_t v);
  int64_t read(int server, Counter c);
  // A server sets a counter of its own window (resuming, before open()).
  void set_own(Counter c, int64_t v);
  // Lets MPI make progress on incoming one-sided operations.
  void poll();
  // Times waits for the servers (nested inside a pull or push). Null: off.
  void set_profiler(Profiler* p);

 private:
  enum Control : int {
    kPullReq = 0,
    kPushSeq = 1,
    kPushLr = 2,  // a float in the word's first bytes
    // Server 0, per worker: epochs counted + kDone once done + kGoneMark once dropped;
    // checkpoint pauses joined.
    kStateWord = 3,
    kPauses = 4,
    kControl = 5
  };
  static constexpr int64_t kDone = int64_t{1} << 30;
  static constexpr int64_t kGoneMark = -(int64_t{1} << 40);
  static constexpr int64_t kLeave = -1;  // a reply that tells a dropped worker to leave
  // The servers' replies (point to point, one int64: a version).
  static constexpr int kTagPullDone = 31;
  static constexpr int kTagPushDone = 32;
  static constexpr MPI_Aint kHeader = 128;  // bytes of counters before the control words
  static_assert(kCounters * sizeof(int64_t) <= kHeader);
  MPI_Aint control_disp(int reader, Control w) const;
  MPI_Aint shard_disp() const;
  MPI_Aint pulled_disp(int s, int reader) const;
  MPI_Aint pushed_disp(int s, int worker) const;
  float* own_floats(MPI_Aint disp) const;
  // Atomic read and write of an int64 word of this server's own window.
  int64_t own_word(MPI_Aint disp);
  void set_own_word(MPI_Aint disp, int64_t v);
  // Makes remote updates of this server's window visible to it and its own visible to them.
  void sync_own();
  // Reader: waits for server s's reply with `tag`; returns its value.
  int64_t await_reply(int s, int tag, RmaStats& st);
  // Server: answers reader with `tag` and `value` (non-blocking; one in flight per kind).
  void reply(int reader, int tag, int64_t value);
  // One shared-lock epoch on server s's window; fetch_add(v == 0) is an atomic read.
  void lock(int s);
  void unlock(int s);
  int64_t fetch_add(int s, MPI_Aint disp, int64_t v);
  int reader_index() const;

  const Comm& comm_;
  // The communicator's rank and handle when the windows were made: the windows and replies
  // keep them after the run's Comm leaves out a dropped worker.
  int rank_;
  MPI_Comm raw_;
  int servers_, workers_, readers_;
  std::vector<int64_t> begin_;  // shard s is [begin_[s], begin_[s+1])
  std::vector<MPI_Win> wins_;
  char* base_ = nullptr;  // this server's window
  bool open_ = false, closed_ = false;
  bool unified_ = false;  // this server's window has the unified memory model
  // Server: each reader's requests served so far.
  std::vector<int64_t> served_pulls_, applied_pushes_, control_;
  std::vector<MPI_Request> replies_;  // per reader: the pull reply, the push reply
  std::vector<int64_t> reply_values_;
  int64_t version_ = 0;
  std::vector<bool> dropped_;  // server: workers it no longer serves
  bool dropped_any_ = false;
  Profiler* prof_ = nullptr;
  int32_t wait_name_ = 0;
};

}  // namespace hpdl
