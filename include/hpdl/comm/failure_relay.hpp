// How a job ends when one rank fails alone after set-up (a full disk under model.h5, a
// diverging parameter-server worker, a failed read): the same agreed ending as a set-up
// error, not MPI_Abort. The failing rank sends its error to rank 0 over a communicator of
// the relay's own; rank 0 sees it in its next polled wait (Watchdog::poll), prints the one
// "hpdl: error:" line, lets its run directory say "failed" (on_failure), and tells every
// rank to end; every rank then exits 1. Two ranks failing at once print one line: the
// first rank 0 receives. Waits that cannot poll (a blocking MPI_Win_free) are ended by the
// launcher once rank 0 has exited. Should rank 0 not answer within the bound (stopped,
// gone, or computing for longer), the failing rank prints its own line and aborts the job.
// Main thread only (MPI_THREAD_FUNNELED).
#pragma once
#include <mpi.h>

#include <functional>
#include <string>

namespace hpdl {

class FailureRelay {
 public:
  // Collective over world (duplicates it: the relay's messages meet no other traffic).
  explicit FailureRelay(MPI_Comm world);
  ~FailureRelay();
  FailureRelay(const FailureRelay&) = delete;
  FailureRelay& operator=(const FailureRelay&) = delete;

  // Rank 0: runs with the error line (without "hpdl: error: ") before the job ends: the
  // run directory's manifest and log. nullptr removes it.
  void on_failure(std::function<void(const std::string&)> hook) { hook_ = std::move(hook); }

  // From a wait loop: ends this process when another rank failed (rank 0: when a rank
  // reported its error; the others: when rank 0 said the job ends). Costs one MPI_Iprobe.
  void poll();

  // This rank cannot go on: ends the job as described above, waiting at most bound_s (at
  // least 5 s) for rank 0. Never returns.
  [[noreturn]] void fail(const std::string& error, double bound_s);

 private:
  // Rank 0: prints the line, runs the hook, tells every rank, exits 1.
  [[noreturn]] void end_job(const std::string& line);
  // Rank != 0: rank 0's end message is waiting: acknowledge it and exit 1.
  [[noreturn]] void leave();

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  bool ending_ = false;  // end_job runs once (its hook may wait, and so poll, again)
  std::function<void(const std::string&)> hook_;
};

}  // namespace hpdl
