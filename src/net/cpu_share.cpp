// The CPU share of calibrate's ranks (see the header).
#include "cpu_share.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>

#include "hpdl/core/error.hpp"
#include "hpdl/core/sample_stats.hpp"
#include "hpdl/net/after_compute.hpp"
#include "measure_loop.hpp"

namespace hpdl {
namespace {

// While this thread spins for `seconds`: the CPU seconds it got per wall second, and the
// median run between two pauses of over 0.2 ms (a CPU budget's quota per period, or a time
// slice where cores are shared; 0 where nothing paused it).
struct Spin {
  double share = 0, slice_s = 0;
};
Spin cpu_while_spinning(double seconds) {
  const double w0 = MPI_Wtime(), c0 = thread_cpu_s();
  volatile uint64_t x = 0;
  double w = w0, last = w0, run_start = w0;
  std::vector<double> runs;
  while ((w = MPI_Wtime()) - w0 < seconds) {
    if (w - last > 2e-4) {  // paused: the run before it ended at `last`
      if (run_start > w0) runs.push_back(last - run_start);  // the first run is partial
      run_start = w;
    }
    last = w;
    for (int i = 0; i < 1000; ++i) x = x + 1;
  }
  Spin r;
  r.share = (thread_cpu_s() - c0) / (w - w0);
  if (runs.size() >= 3) r.slice_s = sample_stats::median(runs);
  return r;
}

}  // namespace

CpuShares measure_cpu_shares(MPI_Comm comm, double seconds) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  quiet_barrier(comm);
  const Spin mine = cpu_while_spinning(seconds);
  CpuShares c;
  c.share.resize(n), c.slice_s.resize(n);
  HPDL_CHECK_MPI(MPI_Gather(&mine.share, 1, MPI_DOUBLE, c.share.data(), 1, MPI_DOUBLE, 0, comm));
  HPDL_CHECK_MPI(
      MPI_Gather(&mine.slice_s, 1, MPI_DOUBLE, c.slice_s.data(), 1, MPI_DOUBLE, 0, comm));
  const double cycle = mine.share > 0 && mine.share < 0.95 ? mine.slice_s / mine.share : 0;
  HPDL_CHECK_MPI(MPI_Allreduce(&cycle, &c.cycle_s, 1, MPI_DOUBLE, MPI_MAX, comm));
  HPDL_CHECK_MPI(MPI_Allreduce(&mine.slice_s, &c.slice_max_s, 1, MPI_DOUBLE, MPI_MAX, comm));
  return c;
}

std::string keep_larger_shares(CpuShares& first, const CpuShares& second) {
  HPDL_REQUIRE(first.share.size() == second.share.size() &&
                   first.slice_s.size() == first.share.size() &&
                   second.slice_s.size() == second.share.size(),
               "calibrate: CPU share measurements of different rank counts");
  const double a = std::accumulate(first.share.begin(), first.share.end(), 0.0);
  const double b = std::accumulate(second.share.begin(), second.share.end(), 0.0);
  if (b > a) first.share = second.share, first.slice_s = second.slice_s;
  if (std::min(a, b) >= 0.9 * std::max(a, b)) return "";
  char line[256];
  std::snprintf(line, sizeof line,
                "the ranks' CPU shares summed to %.3f, then %.3f cores: something else used this "
                "CPU while one was taken; the larger is kept",
                a, b);
  return line;
}

}  // namespace hpdl
