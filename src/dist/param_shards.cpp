// One-sided parameter shards served by their servers (see the header for the protocol).
// Each remote operation is one short shared-lock epoch (lock, issue, unlock: the unlock
// completes it at the target); a server reaches its own words with atomic loads and
// stores. A reader waits for the
// server by polling a control word with an atomic read (each poll a round trip; the caller
// arms the watchdog). No lock_all: OpenMPI 4.1's osc pt2pt hangs under many origins in one.
#include "hpdl/dist/param_shards.hpp"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "hpdl/core/error.hpp"

namespace hpdl {

void RmaStats::record_staleness(int64_t tau) {
  tau = std::max<int64_t>(tau, 0);
  if (static_cast<int64_t>(staleness.size()) <= tau) staleness.resize(tau + 1, 0);
  ++staleness[tau];
}

StalenessSummary summarize_staleness(const std::vector<int64_t>& hist) {
  StalenessSummary out;
  int64_t sum = 0;
  for (size_t t = 0; t < hist.size(); ++t) out.pushes += hist[t], sum += int64_t(t) * hist[t];
  out.mean = out.pushes ? double(sum) / out.pushes : 0.0;
  int64_t seen = 0;
  for (size_t t = 0; t < hist.size(); ++t) {
    seen += hist[t];
    if (seen * 100 >= out.pushes * 95) {
      out.p95 = int64_t(t);
      break;
    }
  }
  return out;
}

ParamShards::ParamShards(const Comm& comm, int servers, std::span<const float> initial)
    : comm_(comm),
      rank_(comm.rank()),
      raw_(comm.raw()),
      servers_(servers),
      workers_(comm.size() - servers),
      readers_(comm.size() - servers + 1),
      begin_(servers + 1),
      wins_(servers, MPI_WIN_NULL) {
  const int64_t n = static_cast<int64_t>(initial.size());
  HPDL_REQUIRE(servers >= 1 && servers < comm.size(), "parameter server needs 1..ranks-1 servers");
  for (int s = 0; s <= servers; ++s) begin_[s] = n * s / servers;
  // Every rank computes the same shards, so every rank fails alike, before any collective.
  for (int s = 0; s < servers; ++s) {
    if (shard_size(s) <= 0 || shard_size(s) >= INT_MAX / 2)
      throw AgreedError("distributed.servers = " + std::to_string(servers) +
                        " would give parameter shard " + std::to_string(s) + " " +
                        std::to_string(shard_size(s)) + " of the model's " + std::to_string(n) +
                        " parameters (each shard needs 1 .. 2^30)");
  }
  for (int s = 0; s < servers; ++s) {
    const bool mine = comm.rank() == s;
    // The shard, a pulled copy per reader and a deposit per worker.
    const MPI_Aint floats = shard_size(s) * MPI_Aint(1 + readers_ + workers_);
    const MPI_Aint bytes = mine ? pushed_disp(s, workers_) : 0;
    HPDL_REQUIRE(!mine || bytes == shard_disp() + floats * MPI_Aint(sizeof(float)),
                 "parameter-server window layout");
    char* base = nullptr;
    HPDL_CHECK_MPI(MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, comm.raw(), &base, &wins_[s]));
    HPDL_CHECK_MPI(MPI_Win_set_errhandler(wins_[s], MPI_ERRORS_RETURN));
    if (mine) {
      // No one else can access the window before the barrier below.
      base_ = base;
      int* model = nullptr;
      int found = 0;
      HPDL_CHECK_MPI(MPI_Win_get_attr(wins_[s], MPI_WIN_MODEL, &model, &found));
      unified_ = found && *model == MPI_WIN_UNIFIED;
      HPDL_CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, s, 0, wins_[s]));
      std::memset(base, 0, shard_disp());
      const size_t shard_bytes = shard_size(s) * sizeof(float);
      std::memcpy(base + shard_disp(), initial.data() + begin_[s], shard_bytes);
      // Until a reader's first pull, its copy is the initial shard (what it starts from).
      for (int r = 0; r < readers_; ++r)
        std::memcpy(base + pulled_disp(s, r), initial.data() + begin_[s], shard_bytes);
      HPDL_CHECK_MPI(MPI_Win_unlock(s, wins_[s]));
      served_pulls_.assign(readers_, 0);
      applied_pushes_.assign(workers_, 0);
      control_.assign(size_t(readers_) * kControl, 0);
      replies_.assign(2 * size_t(readers_), MPI_REQUEST_NULL);
      reply_values_.assign(2 * size_t(readers_), 0);
      dropped_.assign(workers_, false);
    }
  }
  comm.barrier();
}

ParamShards::~ParamShards() = default;

MPI_Aint ParamShards::control_disp(int reader, Control w) const {
  return kHeader + (MPI_Aint(reader) * kControl + w) * MPI_Aint(sizeof(int64_t));
}
MPI_Aint ParamShards::shard_disp() const { return control_disp(readers_, kPullReq); }
MPI_Aint ParamShards::pulled_disp(int s, int reader) const {
  return shard_disp() + shard_size(s) * MPI_Aint(1 + reader) * MPI_Aint(sizeof(float));
}
MPI_Aint ParamShards::pushed_disp(int s, int worker) const {
  return pulled_disp(s, readers_) + shard_size(s) * MPI_Aint(worker) * MPI_Aint(sizeof(float));
}
float* ParamShards::own_floats(MPI_Aint disp) const {
  return reinterpret_cast<float*>(base_ + disp);
}

int ParamShards::reader_index() const { return is_server() ? workers_ : rank_ - servers_; }

std::span<float> ParamShards::own_shard() {
  const int me = rank_;
  return {own_floats(shard_disp()), static_cast<size_t>(shard_size(me))};
}

std::span<float> ParamShards::pulled_copy(int reader) {
  const int me = rank_;
  return {own_floats(pulled_disp(me, reader)), static_cast<size_t>(shard_size(me))};
}

void ParamShards::open() { open_ = true; }

void ParamShards::close() {
  if (closed_) return;
  closed_ = true;
  if (dropped_any_) {
    // A dropped worker never receives its replies nor joins a collective free.
    for (MPI_Request& r : replies_) Comm::release(r);
    return;
  }
  // Every reply was received: each reader waited for its last one.
  HPDL_CHECK_MPI(
      MPI_Waitall(static_cast<int>(replies_.size()), replies_.data(), MPI_STATUSES_IGNORE));
  // MPI_Win_free blocks without polling: a polled barrier first (see NodeSum's destructor).
  comm_.barrier();
  for (MPI_Win& w : wins_) HPDL_CHECK_MPI(MPI_Win_free(&w));
}

void ParamShards::lock(int s) { HPDL_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, s, 0, wins_[s])); }
void ParamShards::unlock(int s) { HPDL_CHECK_MPI(MPI_Win_unlock(s, wins_[s])); }

int64_t ParamShards::fetch_add(int s, MPI_Aint disp, int64_t v) {
  int64_t old = 0;
  lock(s);
  HPDL_CHECK_MPI(
      MPI_Fetch_and_op(&v, &old, MPI_INT64_T, s, disp, v ? MPI_SUM : MPI_NO_OP, wins_[s]));
  unlock(s);
  return old;
}

void ParamShards::set_profiler(Profiler* p) {
  prof_ = p;
  if (p) wait_name_ = p->name("server wait", "rma wait");
}

// A server reaches its own words with atomic loads and stores, ordered by sync_own(): MPI
// atomics on itself would make OpenMPI's osc pt2pt apply incoming accumulates from within
// its own progress, recursively, and never return.
int64_t ParamShards::own_word(MPI_Aint disp) {
  sync_own();
  return __atomic_load_n(reinterpret_cast<int64_t*>(base_ + disp), __ATOMIC_ACQUIRE);
}

void ParamShards::set_own_word(MPI_Aint disp, int64_t v) {
  __atomic_store_n(reinterpret_cast<int64_t*>(base_ + disp), v, __ATOMIC_RELEASE);
  sync_own();
}

void ParamShards::sync_own() {
  // In the unified memory model (every OpenMPI component) the window is this process's
  // memory: a fence orders the accesses. MPI_Win_sync would do the same, but under osc
  // pt2pt it runs the progress engine recursively and slows the server to a crawl.
  if (unified_) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return;
  }
  const int me = rank_;
  lock(me);
  HPDL_CHECK_MPI(MPI_Win_sync(wins_[me]));
  unlock(me);
}

int64_t ParamShards::await_reply(int s, int tag, RmaStats& st) {
  ProfileScope timed(prof_, wait_name_);
  const double t0 = MPI_Wtime();
  int64_t v = 0;
  MPI_Request req = MPI_REQUEST_NULL;
  HPDL_CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT64_T, s, tag, raw_, &req));
  int done = 0;
  IdleWait idle(comm_.idle_policy());
  while (true) {
    HPDL_CHECK_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done && v == kLeave) throw ParamShards::dropped_error();
    if (done) break;
    // Where ranks share cores, the server needs this one's.
    if (comm_.idle_policy().sleep)
      idle.pause();
    else
      sched_yield();
  }
  st.server_wait_s += MPI_Wtime() - t0;
  return v;
}

void ParamShards::reply(int reader, int tag, int64_t value) {
  const size_t k = 2 * size_t(reader) + (tag == kTagPushDone ? 1 : 0);
  // The reader received the previous reply of this kind before it could ask again.
  HPDL_CHECK_MPI(MPI_Wait(&replies_[k], MPI_STATUS_IGNORE));
  reply_values_[k] = value;
  const int dest = reader < workers_ ? servers_ + reader : 0;
  HPDL_CHECK_MPI(MPI_Isend(&reply_values_[k], 1, MPI_INT64_T, dest, tag, raw_, &replies_[k]));
}

void ParamShards::pull(std::span<float> params, std::span<int64_t> versions, RmaStats& st) {
  const double t0 = MPI_Wtime();
  const int me = rank_, r = reader_index();
  // Every request first, so that the servers copy their shards in parallel.
  for (int s = 0; s < servers_; ++s)
    if (s != me) fetch_add(s, control_disp(r, kPullReq), 1);
  for (int s = 0; s < servers_; ++s) {
    const int n = static_cast<int>(shard_size(s));
    if (s == me) {  // rank 0's snapshot of its own shard: it is the only writer
      std::copy_n(own_floats(shard_disp()), n, params.data() + begin_[s]);
      versions[s] = version_;
      continue;
    }
    versions[s] = await_reply(s, kTagPullDone, st);
    lock(s);
    HPDL_CHECK_MPI(MPI_Get(params.data() + begin_[s], n, MPI_FLOAT, s, pulled_disp(s, r), n,
                           MPI_FLOAT, wins_[s]));
    unlock(s);
  }
  ++st.pulls;
  st.pull_s += MPI_Wtime() - t0;
}

void ParamShards::push(std::span<const float> g, float lr, std::span<int64_t> prev, RmaStats& st) {
  HPDL_REQUIRE(!is_server(), "only workers push");
  const double t0 = MPI_Wtime();
  const int r = reader_index();
  for (int s = 0; s < servers_; ++s) {
    // The unlock completes the deposit at the server before it is announced.
    const int n = static_cast<int>(shard_size(s));
    lock(s);
    HPDL_CHECK_MPI(
        MPI_Put(g.data() + begin_[s], n, MPI_FLOAT, s, pushed_disp(s, r), n, MPI_FLOAT, wins_[s]));
    HPDL_CHECK_MPI(MPI_Put(&lr, 1, MPI_FLOAT, s, control_disp(r, kPushLr), 1, MPI_FLOAT, wins_[s]));
    unlock(s);
    fetch_add(s, control_disp(r, kPushSeq), 1);
  }
  for (int s = 0; s < servers_; ++s) prev[s] = await_reply(s, kTagPushDone, st);
  ++st.pushes;
  const double took = MPI_Wtime() - t0;
  st.push_s += took;
  st.max_push_s = std::max(st.max_push_s, took);
}

int64_t ParamShards::serve(const Apply& apply) {
  const int me = rank_;
  poll();
  // Every reader's control words (atomic loads), then the float areas they announce.
  sync_own();
  const auto* words = reinterpret_cast<int64_t*>(base_ + control_disp(0, kPullReq));
  for (size_t i = 0; i < control_.size(); ++i)
    control_[i] = __atomic_load_n(words + i, __ATOMIC_ACQUIRE);
  const int64_t n = shard_size(me);
  float* shard = own_floats(shard_disp());
  int64_t served = 0;
  for (int r = 0; r < readers_; ++r) {
    if (r < workers_ && dropped_[r]) continue;
    const int64_t* c = control_.data() + size_t(r) * kControl;
    if (r < workers_ && c[kPushSeq] > applied_pushes_[r]) {
      float lr = 0;
      std::memcpy(&lr, &c[kPushLr], sizeof lr);
      apply(r, own_floats(pushed_disp(me, r)), lr, shard, own_floats(pulled_disp(me, r)), n);
      applied_pushes_[r] = c[kPushSeq];
      set_own_word(kVersion * sizeof(int64_t), version_ + 1);
      reply(r, kTagPushDone, version_++);
      ++served;
    }
    if (c[kPullReq] > served_pulls_[r]) {
      std::copy_n(shard, n, own_floats(pulled_disp(me, r)));
      served_pulls_[r] = c[kPullReq];
      reply(r, kTagPullDone, version_);
      ++served;
    }
  }
  return served;
}

ParamShards::WorkerWords ParamShards::worker_words(int worker) {
  HPDL_REQUIRE(rank_ == 0, "only server 0 keeps the workers' words");
  sync_own();
  const auto* c = reinterpret_cast<int64_t*>(base_ + control_disp(worker, kPullReq));
  WorkerWords w;
  w.requests = __atomic_load_n(c + kPullReq, __ATOMIC_ACQUIRE) +
               __atomic_load_n(c + kPushSeq, __ATOMIC_ACQUIRE);
  w.pauses = __atomic_load_n(c + kPauses, __ATOMIC_ACQUIRE);
  int64_t state = __atomic_load_n(c + kStateWord, __ATOMIC_ACQUIRE);
  if ((w.gone = state < 0)) state -= kGoneMark;
  w.done = state >= kDone;
  w.epochs = state % kDone;
  return w;
}

void ParamShards::count_epochs_of_mine(int64_t n) {
  if (n != 0) fetch_add(0, control_disp(reader_index(), kStateWord), n);
}
void ParamShards::count_pause_of_mine() { fetch_add(0, control_disp(reader_index(), kPauses), 1); }
void ParamShards::count_done_of_mine() {
  fetch_add(0, control_disp(reader_index(), kStateWord), kDone);
}

void ParamShards::drop(int worker) {
  HPDL_REQUIRE(is_server() && worker >= 0 && worker < workers_, "drop: not a server's worker");
  if (dropped_[worker]) return;
  dropped_[worker] = dropped_any_ = true;
  if (rank_ == 0) {
    sync_own();
    __atomic_fetch_add(reinterpret_cast<int64_t*>(base_ + control_disp(worker, kStateWord)),
                       kGoneMark, __ATOMIC_ACQ_REL);
    __atomic_fetch_add(reinterpret_cast<int64_t*>(base_ + kGone * sizeof(int64_t)), 1,
                       __ATOMIC_ACQ_REL);
    sync_own();
  }
  // Both kinds of reply, so that whatever it waits for next tells it to leave. (The last
  // reply is not waited for: the worker may be dead.)
  for (int tag : {kTagPullDone, kTagPushDone}) {
    const size_t k = 2 * size_t(worker) + (tag == kTagPushDone ? 1 : 0);
    static const int64_t leave = kLeave;
    Comm::release(replies_[k]);
    HPDL_CHECK_MPI(MPI_Isend(&leave, 1, MPI_INT64_T, servers_ + worker, tag, raw_, &replies_[k]));
  }
}

LeftJob ParamShards::dropped_error() {
  return LeftJob(
      "the parameter servers dropped this worker (silent for over half of run.watchdog_s); it "
      "leaves, the others go on");
}

bool ParamShards::dropped_me() {
  return !is_server() && fetch_add(0, control_disp(reader_index(), kStateWord), 0) < 0;
}

std::vector<int> ParamShards::gone_workers() {
  std::vector<int> gone;
  if (read(0, kGone) > 0) {
    for (int w = 0; w < workers_; ++w) {
      const int64_t state = rank_ == 0 ? own_word(control_disp(w, kStateWord))
                                       : fetch_add(0, control_disp(w, kStateWord), 0);
      if (state < 0) gone.push_back(w);
    }
  }
  if (!gone.empty()) dropped_any_ = true;
  return gone;
}

void ParamShards::add(int server, Counter c, int64_t v) {
  if (server == rank_) {
    sync_own();
    __atomic_fetch_add(reinterpret_cast<int64_t*>(base_ + c * sizeof(int64_t)), v,
                       __ATOMIC_ACQ_REL);
    sync_own();
    return;
  }
  fetch_add(server, c * sizeof(int64_t), v);
}

int64_t ParamShards::read(int server, Counter c) {
  if (server == rank_) return c == kVersion ? version_ : own_word(c * sizeof(int64_t));
  return fetch_add(server, c * sizeof(int64_t), 0);
}

void ParamShards::set_own(Counter c, int64_t v) {
  const int me = rank_;
  HPDL_REQUIRE(me < servers_ && !open_, "only a server sets its own counters, before open()");
  HPDL_CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, wins_[me]));
  HPDL_CHECK_MPI(MPI_Put(&v, 1, MPI_INT64_T, me, c * sizeof(int64_t), 1, MPI_INT64_T, wins_[me]));
  HPDL_CHECK_MPI(MPI_Win_unlock(me, wins_[me]));
  if (c == kVersion) version_ = v;
}

void ParamShards::poll() {
  int flag = 0;
  HPDL_CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, raw_, &flag, MPI_STATUS_IGNORE));
}

}  // namespace hpdl
