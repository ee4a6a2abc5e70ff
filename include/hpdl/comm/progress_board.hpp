// Where every rank is, readable by the others: one small record per rank in an MPI window
// (MPI_Win_allocate, passive target, MPI_Win_lock_all held for the board's life). A rank
// writes only its own record, with plain stores: the bounded wait it is in (operation and
// step) and a heartbeat that its watchdog thread advances twice a second, whatever the main
// thread is doing. When a bounded wait expires, the waiting rank reads every other record
// twice, a little more than a second apart, with MPI_Rget under a bound, and names the ranks
// that did not arrive:
//   no answer, or a heartbeat that did not move   stopped or hung (kill -STOP, a dead node)
//   running, but not in this wait at this step     late (still computing, or elsewhere)
// Reading needs no help from a stopped target on shared memory (the record is read from its
// memory); over TCP (osc ucx) a target that is not inside MPI does not answer, and is named
// as such. OpenMPI's osc pt2pt can block inside MPI_Rget: the watchdog thread then ends
// the rank with its shorter message.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hpdl {

class ProgressBoard {
 public:
  // One record per rank, 64 bytes: what the others read.
  struct Record {
    int64_t step = 0;
    int64_t heartbeat = 0;  // advanced by the watchdog thread; frozen if the process is
    int32_t waiting = 0;    // 1 while in a bounded wait, 0 between waits
    char op[44] = {};       // the current (waiting = 1) or last finished wait
  };
  static_assert(sizeof(Record) == 64);

  // Collective over comm.
  explicit ProgressBoard(MPI_Comm comm);
  // Does not free the window: close() does, collectively, once every rank is done.
  ~ProgressBoard();
  ProgressBoard(const ProgressBoard&) = delete;
  ProgressBoard& operator=(const ProgressBoard&) = delete;
  void close();

  // This rank's own record. Safe from the main thread (publish) and the watchdog thread
  // (beat) at the same time: they write different fields.
  void publish(const char* op, int64_t step, bool waiting);
  void beat();

  // Main thread only, after this rank's wait on (op, step) outlasted its bound: reads the
  // other records (each read bounded by read_bound_s) and names the ranks that did not
  // arrive, e.g. "rank 1 is stopped or hung (no heartbeat for 1.2 s; last finished: loss
  // allreduce at step 41)". Of the ranks that did arrive, the lowest reports (one line a
  // job, not one a rank).
  struct Verdict {
    std::string text;      // empty: nothing could be read (no board, one rank)
    bool reporter = true;  // false: a lower rank that arrived reports it
  };
  Verdict name_late(const char* op, int64_t step, double read_bound_s = 1.0);

 private:
  // Reads every other rank's record into out; false where the read did not complete.
  std::vector<bool> read_all(std::vector<Record>& out, double bound_s);

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  MPI_Win win_ = MPI_WIN_NULL;
  Record* mine_ = nullptr;  // this rank's record, inside the window
};

}  // namespace hpdl
