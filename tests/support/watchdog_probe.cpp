// Watchdog check under mpirun: rank 1 never reaches the barrier that the other ranks wait
// in under a 1 s watchdog. The error line must name the waiting rank, the operation, the
// step and what rank 1 is doing; the whole job must end within seconds (the CTest wrapper
// requires a non-zero exit and exactly one error line). Modes (argv[1]):
//   late      rank 1 sleeps (its process runs): "rank 1 is running but has not arrived"
//   stopped   rank 1 stops itself (SIGSTOP): "rank 1 is stopped or hung"
//   blocking  the others wait in a blocking MPI_Barrier, which cannot poll: the watchdog
//             thread ends them with the short message ("another rank is late or gone")
#include <mpi.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/progress_board.hpp"
#include "hpdl/comm/watchdog.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const char* mode = argc > 1 ? argv[1] : "late";
  hpdl::Comm comm(MPI_COMM_WORLD);
  hpdl::ProgressBoard board(comm.raw());
  hpdl::Watchdog watchdog(1.0, comm.rank());
  watchdog.attach(&board);
  comm.bound_waits_by(&watchdog);
  {
    hpdl::WatchdogScope guard(watchdog, "set-up", 0);  // every rank gets past this
    comm.barrier();
  }
  if (comm.rank() == 1) {
    if (std::strcmp(mode, "stopped") == 0) raise(SIGSTOP);
    sleep(60);  // the late rank
  } else {
    hpdl::WatchdogScope guard(watchdog, "test barrier", 7);
    if (std::strcmp(mode, "blocking") == 0)
      MPI_Barrier(MPI_COMM_WORLD);
    else
      comm.barrier();
  }
  MPI_Finalize();
  return 0;
}
