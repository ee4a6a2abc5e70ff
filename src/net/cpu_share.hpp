// The share of a core each rank of `hpdl calibrate` gets while every rank computes (a host's
// CPU budget, or cores shared by more ranks than they have), and how it runs between pauses.
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

namespace hpdl {

struct CpuShares {
  std::vector<double> share;    // per rank (on rank 0): CPU seconds per wall second
  std::vector<double> slice_s;  // per rank (on rank 0): the median run between two pauses
  double cycle_s = 0;      // on every rank: the longest run-and-pause cycle of any rank (0: none)
  double slice_max_s = 0;  // on every rank: the longest slice of any rank (0: none paused)
};

// Collective over comm: every rank spins for `seconds` from a barrier that sleeps.
CpuShares measure_cpu_shares(MPI_Comm comm, double seconds);

// Of two measurements, the one whose ranks' shares sum to more (each rank's share with its
// slice): a load that passes while one is taken (another job, the kernel tearing down an
// earlier cluster's namespaces) reads as a smaller total, and a forecast would charge it to
// every step; ranks that share cores move between measurements, their sum does not. Returns
// a line with both sums where one is over 10 % below the other ("" otherwise).
std::string keep_larger_shares(CpuShares& first, const CpuShares& second);

}  // namespace hpdl
