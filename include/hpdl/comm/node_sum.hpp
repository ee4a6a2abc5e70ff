// In-place sums of float vectors across the ranks of a communicator whose ranks all share one
// node, through a shared-memory window (MPI_Win_allocate_shared) instead of MPI's transport.
// Each rank copies a chunk into its own slot of the window; after a barrier each rank sums
// one slice of the chunk over every rank's slot, in rank order, and leaves it in its slot;
// after a second barrier each rank copies every slice of the sum back. Every element is
// added by one rank in one order, so every rank ends with the same bits. Chunks alternate
// between two halves of each slot, so a rank may refill one while another still reads the
// other: two barriers a chunk.
//
// Why: OpenMPI's allreduce between ranks of one host moves every piece through its shared-
// memory transport and, for large pieces, a copy by the kernel (CMA, process_vm_readv). On
// the project's virtual machines that copy runs at a few GB/s: 215 KiB took 50 us, against
// a memory copy of a few us.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "hpdl/comm/comm.hpp"

namespace hpdl {

class NodeSum {
 public:
  // Collective over comm: a NodeSum for vectors of up to any length, in chunks of at most
  // chunk_floats, when comm has more than one rank and all of them share this node; else
  // nullptr (the caller takes MPI's allreduce). Barriers wait through comm (bounded by its
  // watchdog).
  static std::unique_ptr<NodeSum> open(const Comm& comm, int64_t chunk_floats);
  // Collective, except while an exception unwinds this rank (then the window is left to the
  // process's end: another rank may not come to free it).
  ~NodeSum();
  NodeSum(const NodeSum&) = delete;
  NodeSum& operator=(const NodeSum&) = delete;

  // Collective: data's n floats (the same n on every rank) become their sum over the ranks.
  void sum(float* data, int64_t n);

  int64_t chunk_floats() const { return chunk_; }

 private:
  NodeSum(const Comm& comm, MPI_Win win, std::vector<float*> slots, int64_t chunk);
  // Makes every rank's stores to the window visible to every other rank.
  void fence();
  // Slice [lo, hi) of a chunk of m floats that `rank` sums (cache-line aligned).
  void slice(int64_t m, int rank, int64_t& lo, int64_t& hi) const;

  const Comm& comm_;
  MPI_Win win_;
  std::vector<float*> slots_;  // per rank: its two halves of chunk_ floats each
  int64_t chunk_;
  int half_ = 0;  // the half the next chunk goes through
};

}  // namespace hpdl
