// The bound on MPI's start (start_bound.hpp).
#include "hpdl/comm/start_bound.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hpdl/core/environment.hpp"
#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {

constexpr double kDefaultLimitS = 120;  // MPI_Init of thousands of ranks takes tens of seconds

}  // namespace

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const auto v = environment_variable(name)) return std::atoi(v->c_str());
  return -1;
}

double StartBound::limit_s() {
  const auto v = environment_variable("HPDL_MPI_START_S");
  if (!v) return kDefaultLimitS;
  char* end = nullptr;
  const double s = std::strtod(v->c_str(), &end);
  if (end == v->c_str() || *end != '\0' || !(s > 0))
    throw Error("HPDL_MPI_START_S = '" + *v + "': expected seconds > 0");
  return s;
}

StartBound::StartBound() {
  const double limit = limit_s();
  const int rank = launcher_rank();
  thread_ = std::thread([this, limit, rank] {
    const double wait = limit + (rank == 0 ? 0.0 : 2.0);
    // Counted in slices, each at most twice its length: time this process did not run at
    // all (kill -STOP; mpirun continues a stopped rank before it ends it) does not count.
    using Clock = std::chrono::steady_clock;
    constexpr std::chrono::duration<double> kSlice(0.25);
    double waited = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (waited < wait) {
      const auto t0 = Clock::now();
      if (started_.wait_for(lock, kSlice, [this] { return done_; })) return;
      const std::chrono::duration<double> slice = Clock::now() - t0;
      waited += std::min(slice.count(), 2 * kSlice.count());
    }
    std::fprintf(stderr,
                 "hpdl: error: rank %d: MPI did not start within %g s (HPDL_MPI_START_S): "
                 "another rank of the job did not start, or is stopped or hung\n",
                 rank, limit);
    std::fflush(stderr);
    std::_Exit(3);
  });
}

StartBound::~StartBound() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  started_.notify_all();
  thread_.join();
}

}  // namespace hpdl
