// A bound on MPI's start. MPI_Init waits for every rank of the job to start (OpenMPI's PMIx
// fence has no time limit), so one rank stopped or hung before it (a process stopped, a
// host stalled loading the libraries from a network file system) held the others there
// until the job's wall-time limit, before hpdl's watchdog (which needs the config, read
// after MPI starts) exists. While a StartBound lives, a thread waits for it to end: past
// the limit it prints one line and ends this process (exit 3, as the watchdog does), and
// mpirun or srun end the job. Rank 0 speaks at the limit, the others 2 s later (by when
// rank 0's exit has ended the job), so one line comes unless rank 0 is the late one. Time
// this process was stopped does not count.
#pragma once
#include <condition_variable>
#include <mutex>
#include <thread>

namespace hpdl {

// The rank the launcher gave this process (mpirun, srun, a PMI launcher), before MPI has
// started; -1 when none did (a process started alone).
int launcher_rank();

class StartBound {
 public:
  // limit_s: HPDL_MPI_START_S, else 120 s; rank: the launcher's (before MPI has one).
  StartBound();
  ~StartBound();  // MPI has started: the thread ends
  StartBound(const StartBound&) = delete;
  StartBound& operator=(const StartBound&) = delete;

  // HPDL_MPI_START_S as seconds (> 0), else the default; Error naming a bad value.
  static double limit_s();

 private:
  std::mutex mutex_;
  std::condition_variable started_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace hpdl
