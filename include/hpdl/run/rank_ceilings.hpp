// Every rank's compute ceilings (run/ceilings.hpp), measured at once through a backend's
// kernels on the rank's OpenMP threads, as training shares the machine: `hpdl calibrate`
// writes them into network.json (the CPU backend), a profiled training run rates its layers
// against their median (the model's own kernels, on its device).
#pragma once
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/run/ceilings.hpp"

namespace hpdl {

struct RankCeilings {
  std::vector<double> gemm_flops_per_s, memory_Bps;  // one per rank
  Ceilings median() const;
};

// Collective. `seconds` per ceiling and rank. The ranks on one machine (counted by the
// kernel's boot id, which emulated hosts share with their machine) share its memory for the
// bandwidth test; a rank that cannot read the boot id counts as alone on its machine.
RankCeilings measure_rank_ceilings(const Comm& comm, KernelFactory& kernels, double seconds = 0.3);

}  // namespace hpdl
