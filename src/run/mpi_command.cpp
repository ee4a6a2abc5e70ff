// run_under_mpi (see the header).
#include "hpdl/run/mpi_command.hpp"

#include <mpi.h>

#include <cstdio>
#include <memory>

#include "hpdl/core/error.hpp"

namespace hpdl {

int run_under_mpi(int* argc, char*** argv, const std::function<int(Comm&)>& body) {
  std::unique_ptr<MpiSession> mpi;
  try {
    mpi = std::make_unique<MpiSession>(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    return 1;
  }
  const int rank = mpi->world_rank();
  set_error_rank(rank);
  try {
    Comm comm(MPI_COMM_WORLD);
    return body(comm);  // the session finalizes MPI
  } catch (const AgreedError& e) {
    // Every rank holds the same message: rank 0 prints it, all end together.
    if (rank == 0) std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    // Only this rank failed: the others may be waiting in a collective, so end the job.
    std::fprintf(stderr, "hpdl: error: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    MpiSession::abort(1);
  }
}

}  // namespace hpdl
