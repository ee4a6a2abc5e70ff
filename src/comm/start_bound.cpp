// The bound on MPI's start (start_bound.hpp).
#include "hpdl/comm/start_bound.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hpdl/core/environment.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/running_clock.hpp"

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
    // Time this process did not run at all (kill -STOP; mpirun continues a stopped rank
    // before it ends it) does not count: the clock is read every quarter second.
    RunningClock clock;
    const int64_t start = clock.now_ns();
    std::unique_lock<std::mutex> lock(mutex_);
    while ((clock.now_ns() - start) * 1e-9 < wait)
      if (started_.wait_for(lock, std::chrono::milliseconds(250), [this] { return done_; })) return;
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
