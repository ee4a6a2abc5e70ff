// One-sided parameter shards (see the header for the protocol). Every operation is one
// passive-target epoch: lock, issue, unlock; the unlock completes it at the target.
#include "hpdl/dist/param_shards.hpp"

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
    : comm_(comm), servers_(servers), begin_(servers + 1), wins_(servers, MPI_WIN_NULL) {
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
    const MPI_Aint bytes = mine ? kHeader + shard_size(s) * MPI_Aint(sizeof(float)) : 0;
    char* base = nullptr;
    HPDL_CHECK_MPI(MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, comm.raw(), &base, &wins_[s]));
    HPDL_CHECK_MPI(MPI_Win_set_errhandler(wins_[s], MPI_ERRORS_RETURN));
    if (mine) {
      // No one else can access the window before the barrier below.
      HPDL_CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, s, 0, wins_[s]));
      std::memset(base, 0, kHeader);
      std::memcpy(base + kHeader, initial.data() + begin_[s], shard_size(s) * sizeof(float));
      HPDL_CHECK_MPI(MPI_Win_unlock(s, wins_[s]));
    }
    size_t need = static_cast<size_t>(shard_size(s));
    if (scratch_.size() < need) scratch_.resize(need);
  }
  comm.barrier();
}

ParamShards::~ParamShards() = default;

void ParamShards::close() {
  if (closed_) return;
  closed_ = true;
  for (MPI_Win& w : wins_) HPDL_CHECK_MPI(MPI_Win_free(&w));
}

void ParamShards::set_profiler(Profiler* p) {
  prof_ = p;
  if (!p) return;
  lock_name_ = p->name("lock wait", "rma wait");
  flush_name_ = p->name("flush", "rma wait");
}

double ParamShards::lock(int lock_type, int s, RmaStats* st) {
  ProfileScope timed(prof_, lock_name_);
  const double t0 = MPI_Wtime();
  HPDL_CHECK_MPI(MPI_Win_lock(lock_type, s, 0, wins_[s]));
  const double waited = MPI_Wtime() - t0;
  if (st) st->lock_wait_s += waited;
  return waited;
}

void ParamShards::pull(std::span<float> params, std::span<int64_t> versions, RmaStats& st) {
  const double t0 = MPI_Wtime();
  for (int s = 0; s < servers_; ++s) {
    const int n = static_cast<int>(shard_size(s));
    lock(MPI_LOCK_SHARED, s, &st);
    HPDL_CHECK_MPI(MPI_Get_accumulate(nullptr, 0, MPI_FLOAT, params.data() + begin_[s], n,
                                      MPI_FLOAT, s, kHeader, n, MPI_FLOAT, MPI_NO_OP, wins_[s]));
    HPDL_CHECK_MPI(MPI_Fetch_and_op(nullptr, &versions[s], MPI_INT64_T, s,
                                    kVersion * sizeof(int64_t), MPI_NO_OP, wins_[s]));
    HPDL_CHECK_MPI(MPI_Win_unlock(s, wins_[s]));
  }
  ++st.pulls;
  st.pull_s += MPI_Wtime() - t0;
}

void ParamShards::push_sum(std::span<const float> update, std::span<int64_t> prev, RmaStats& st) {
  const double t0 = MPI_Wtime();
  const int64_t one = 1;
  for (int s = 0; s < servers_; ++s) {
    const int n = static_cast<int>(shard_size(s));
    lock(MPI_LOCK_SHARED, s, &st);
    HPDL_CHECK_MPI(MPI_Accumulate(update.data() + begin_[s], n, MPI_FLOAT, s, kHeader, n, MPI_FLOAT,
                                  MPI_SUM, wins_[s]));
    HPDL_CHECK_MPI(MPI_Fetch_and_op(&one, &prev[s], MPI_INT64_T, s, kVersion * sizeof(int64_t),
                                    MPI_SUM, wins_[s]));
    HPDL_CHECK_MPI(MPI_Win_unlock(s, wins_[s]));
  }
  ++st.pushes;
  st.push_s += MPI_Wtime() - t0;
}

void ParamShards::push_rmw(const ShardUpdate& update, std::span<int64_t> prev, RmaStats& st) {
  const double t0 = MPI_Wtime();
  const int64_t one = 1;
  for (int s = 0; s < servers_; ++s) {
    const int n = static_cast<int>(shard_size(s));
    lock(MPI_LOCK_EXCLUSIVE, s, &st);
    HPDL_CHECK_MPI(MPI_Get(scratch_.data(), n, MPI_FLOAT, s, kHeader, n, MPI_FLOAT, wins_[s]));
    HPDL_CHECK_MPI(MPI_Fetch_and_op(&one, &prev[s], MPI_INT64_T, s, kVersion * sizeof(int64_t),
                                    MPI_SUM, wins_[s]));
    {
      ProfileScope timed(prof_, flush_name_);
      HPDL_CHECK_MPI(MPI_Win_flush(s, wins_[s]));
    }
    update(scratch_.data(), begin_[s], n);
    HPDL_CHECK_MPI(MPI_Put(scratch_.data(), n, MPI_FLOAT, s, kHeader, n, MPI_FLOAT, wins_[s]));
    HPDL_CHECK_MPI(MPI_Win_unlock(s, wins_[s]));
  }
  ++st.pushes;
  st.push_s += MPI_Wtime() - t0;
}

void ParamShards::add(int server, Counter c, int64_t v) {
  int64_t old = 0;
  lock(MPI_LOCK_SHARED, server, nullptr);
  HPDL_CHECK_MPI(
      MPI_Fetch_and_op(&v, &old, MPI_INT64_T, server, c * sizeof(int64_t), MPI_SUM, wins_[server]));
  HPDL_CHECK_MPI(MPI_Win_unlock(server, wins_[server]));
}

int64_t ParamShards::read(int server, Counter c) {
  int64_t v = 0;
  lock(MPI_LOCK_SHARED, server, nullptr);
  HPDL_CHECK_MPI(MPI_Fetch_and_op(nullptr, &v, MPI_INT64_T, server, c * sizeof(int64_t), MPI_NO_OP,
                                  wins_[server]));
  HPDL_CHECK_MPI(MPI_Win_unlock(server, wins_[server]));
  return v;
}

void ParamShards::set_own(Counter c, int64_t v) {
  const int me = comm_.rank();
  HPDL_REQUIRE(me < servers_, "only a server sets its own counters");
  lock(MPI_LOCK_EXCLUSIVE, me, nullptr);
  HPDL_CHECK_MPI(MPI_Put(&v, 1, MPI_INT64_T, me, c * sizeof(int64_t), 1, MPI_INT64_T, wins_[me]));
  HPDL_CHECK_MPI(MPI_Win_unlock(me, wins_[me]));
}

void ParamShards::poll() {
  int flag = 0;
  HPDL_CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_.raw(), &flag, MPI_STATUS_IGNORE));
}

}  // namespace hpdl
