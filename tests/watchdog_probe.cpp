// Watchdog check under mpirun -np 2: rank 1 never reaches the barrier; rank 0 waits in it
// under a 1 s watchdog, which must name the rank, the operation and the step and end the
// job (the CTest wrapper requires a non-zero exit within seconds and that one error line).
#include <mpi.h>
#include <unistd.h>

#include "hpdl/dist/watchdog.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  hpdl::Watchdog watchdog(1.0, rank);
  if (rank == 1) {
    sleep(60);  // the late rank
  } else {
    hpdl::WatchdogScope guard(watchdog, "test barrier", 7);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
