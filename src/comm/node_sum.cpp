// Sums through one shared-memory window: copy in, sum a slice over every slot, copy out.
#include "hpdl/comm/node_sum.hpp"

#include <algorithm>
#include <cstring>
#include <exception>

#include "hpdl/core/error.hpp"

namespace hpdl {

namespace {
constexpr int64_t kLine = 16;  // floats in a 64-byte cache line: slices never share one
}

std::unique_ptr<NodeSum> NodeSum::open(const Comm& comm, int64_t chunk_floats) {
  if (comm.size() == 1) return nullptr;
  // Either every rank's node holds all of comm, or none does: all ranks decide alike.
  if (comm.node_size() != comm.size()) return nullptr;

  const int64_t chunk =
      (std::max<int64_t>(chunk_floats, comm.size() * kLine) + kLine - 1) / kLine * kLine;
  MPI_Info info;
  HPDL_CHECK_MPI(MPI_Info_create(&info));
  MPI_Info_set(info, "alloc_shared_noncontig", "true");  // each slot on its rank's memory
  float* mine = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  const int alloc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(2 * chunk * sizeof(float)),
                                            sizeof(float), info, comm.raw(), &mine, &win);
  MPI_Info_free(&info);
  HPDL_CHECK_MPI(alloc);
  std::vector<float*> slots(comm.size());
  for (int r = 0; r < comm.size(); ++r) {
    MPI_Aint bytes = 0;
    int unit = 0;
    HPDL_CHECK_MPI(MPI_Win_shared_query(win, r, &bytes, &unit, &slots[r]));
  }
  HPDL_CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));  // one epoch for MPI_Win_sync
  return std::unique_ptr<NodeSum>(new NodeSum(comm, win, std::move(slots), chunk));
}

NodeSum::NodeSum(const Comm& comm, MPI_Win win, std::vector<float*> slots, int64_t chunk)
    : comm_(comm), win_(win), slots_(std::move(slots)), chunk_(chunk) {}

NodeSum::~NodeSum() {
  // Freeing is collective: while an error unwinds this rank the others may never come (the
  // window then ends with the process), so only a normal end frees it. MPI_Win_free blocks
  // without polling: a polled barrier first, so that a rank that fails meanwhile (rank 0
  // writing model.h5 on a full disk) still ends this one the agreed way (its own exit 1)
  // instead of leaving it to the launcher's kill.
  bool all_here = std::uncaught_exceptions() == 0;
  if (all_here) try {
      comm_.barrier();
    } catch (const Error&) {
      all_here = false;
    }
  MPI_Win_unlock_all(win_);
  if (all_here) MPI_Win_free(&win_);
}

void NodeSum::fence() {
  HPDL_CHECK_MPI(MPI_Win_sync(win_));
  comm_.barrier();
  HPDL_CHECK_MPI(MPI_Win_sync(win_));
}

void NodeSum::slice(int64_t m, int rank, int64_t& lo, int64_t& hi) const {
  const int64_t ranks = static_cast<int64_t>(slots_.size());
  const int64_t per = ((m + ranks - 1) / ranks + kLine - 1) / kLine * kLine;
  lo = std::min(m, rank * per);
  hi = std::min(m, lo + per);
}

void NodeSum::sum(float* data, int64_t n) {
  const int me = comm_.rank();
  const int ranks = static_cast<int>(slots_.size());
  for (int64_t off = 0; off < n; off += chunk_) {
    const int64_t m = std::min(chunk_, n - off);
    const int64_t half = half_ * chunk_;
    half_ ^= 1;
    std::memcpy(slots_[me] + half, data + off, static_cast<size_t>(m) * sizeof(float));
    fence();
    int64_t lo = 0, hi = 0;
    slice(m, me, lo, hi);
    // Summed in rank order into this rank's own data, then left in its slot for the others.
    float* out = data + off;
    const float* s0 = slots_[0] + half;
    const float* s1 = slots_[1] + half;
    for (int64_t i = lo; i < hi; ++i) out[i] = s0[i] + s1[i];
    for (int r = 2; r < ranks; ++r) {
      const float* s = slots_[r] + half;
      for (int64_t i = lo; i < hi; ++i) out[i] += s[i];
    }
    std::memcpy(slots_[me] + half + lo, out + lo, static_cast<size_t>(hi - lo) * sizeof(float));
    fence();
    for (int r = 0; r < ranks; ++r) {
      if (r == me) continue;
      slice(m, r, lo, hi);
      std::memcpy(out + lo, slots_[r] + half + lo, static_cast<size_t>(hi - lo) * sizeof(float));
    }
  }
}

}  // namespace hpdl
