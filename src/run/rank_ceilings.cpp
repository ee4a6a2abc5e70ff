// measure_rank_ceilings (see the header): each rank fills its own entries, a sum gives every
// rank the whole lists.
#include "hpdl/run/rank_ceilings.hpp"

#include <algorithm>
#include <fstream>
#include <string>

#include "hpdl/profile/trace_writer.hpp"

namespace hpdl {

Ceilings RankCeilings::median() const {
  return {stats_of(gemm_flops_per_s).p50, stats_of(memory_Bps).p50};
}

RankCeilings measure_rank_ceilings(const Comm& comm, KernelFactory& kernels, double seconds) {
  std::string boot;
  std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), boot);
  const std::vector<std::string> boots = comm.allgather(boot);
  const int n = comm.size();
  const int on_node =
      boot.empty() ? 1 : static_cast<int>(std::count(boots.begin(), boots.end(), boot));
  comm.barrier();
  const Ceilings mine = measure_ceilings(kernels, seconds, on_node);
  std::vector<double> all(2 * static_cast<size_t>(n), 0.0);
  all[static_cast<size_t>(comm.rank())] = mine.gemm_flops_per_s;
  all[static_cast<size_t>(n + comm.rank())] = mine.memory_Bps;
  comm.allreduce_sum(all.data(), 2 * int64_t(n));
  RankCeilings r;
  r.gemm_flops_per_s.assign(all.begin(), all.begin() + n);
  r.memory_Bps.assign(all.begin() + n, all.end());
  return r;
}

}  // namespace hpdl
