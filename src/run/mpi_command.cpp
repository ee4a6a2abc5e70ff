// run_under_mpi (see the header).
#include "hpdl/run/mpi_command.hpp"

#include <mpi.h>

#include <cstdio>
#include <memory>

#include "hpdl/comm/failure_relay.hpp"
#include "hpdl/comm/start_bound.hpp"
#include "hpdl/config/settings.hpp"
#include "hpdl/core/error.hpp"

namespace hpdl {

int run_under_mpi(int* argc, char*** argv, const std::function<int(Comm&)>& body) {
  std::unique_ptr<MpiSession> mpi;
  std::unique_ptr<FailureRelay> relay;  // freed before the session finalizes
  try {
    mpi = std::make_unique<MpiSession>(argc, argv);
    relay = std::make_unique<FailureRelay>(MPI_COMM_WORLD);
  } catch (const std::exception& e) {
    // Every rank fails alike before MPI (a bad HPDL_MPI_START_S): the first one says so.
    if (launcher_rank() <= 0) std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    return 1;
  }
  const int rank = mpi->world_rank();
  try {
    Comm comm(MPI_COMM_WORLD);
    comm.relay_failures_through(relay.get());
    const int rc = body(comm);
    if (comm.lost_ranks()) {
      // The job lost a rank on the way (a dropped parameter-server worker): MPI's teardown
      // would wait for it, so this process ends without it.
      (void)relay.release();
      mpi->end_without_finalize();
    }
    return rc;  // the session finalizes MPI
  } catch (const LeftJob& e) {
    // The others dropped this rank and finished without it: it ends alone, quietly.
    std::fprintf(stderr, "hpdl: rank %d: %s\n", rank, e.what());
    (void)relay.release();
    mpi->end_without_finalize();
    return 0;
  } catch (const AgreedError& e) {
    // Every rank holds the same message: rank 0 prints it, all end together.
    if (rank == 0) std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    // Only this rank failed; the others may be waiting for it: the relay ends the job.
    relay->fail(e.what(), RunConfig{}.watchdog_s);
  }
}

}  // namespace hpdl
