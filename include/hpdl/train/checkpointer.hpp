// When to checkpoint, decided the same on every rank: every `every_steps` steps (the same
// step everywhere), every `every_s` seconds of rank 0's clock, and when a stop signal has
// reached any rank. Clock and signals are local, so after each step every rank starts a
// one-int non-blocking allreduce (bitwise or) of its flags and completes the previous
// step's; a flag raised at step k therefore acts after step k+1 on every rank, and the step
// itself never waits for it. Under local SGD the ranks meet only at an interval's end, so
// the agreement runs there (a per-step one made every local step wait for the slowest
// rank, and on a budgeted host for its pause); a flag then acts after the next interval's
// end. Rank 0 writes the file.
#pragma once
#include <mpi.h>

#include <chrono>
#include <functional>
#include <string>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/train/checkpoint.hpp"

namespace hpdl {

class Checkpointer {
 public:
  // path: the checkpoint file (used by rank 0). identity: this run's identity fields.
  Checkpointer(const CheckpointConfig& cfg, const Comm& comm, Watchdog& watchdog, std::string path,
               Checkpoint identity);
  ~Checkpointer();

  // Collective, after every step: true on every rank when a checkpoint is due now. `agree`:
  // whether this step completes the last flag agreement and starts the next (the same on
  // every rank; otherwise only the periodic every_steps counts).
  bool due(int64_t global_step, bool agree = true);
  // The stop signal that made the last due() true (SIGUSR1, SIGTERM), or 0.
  int stop_signal() const { return stop_; }
  // Rank 0 writes `c` (identity filled in here) and calls on_written; the others return.
  void write(Checkpoint c);
  // Rank 0's report of each checkpoint written (global step, seconds, bytes).
  std::function<void(int64_t global_step, double write_s, uint64_t bytes)> on_written;
  // Collective: completes the outstanding flag agreement. Call before leaving the loop.
  void finish(int64_t global_step);

  const CheckpointConfig& config() const { return cfg_; }
  const std::string& path() const { return path_; }
  int64_t written() const { return written_; }
  double last_write_s() const { return last_write_s_; }
  uint64_t last_bytes() const { return last_bytes_; }

 private:
  enum Flag : int { kUsr1 = 1, kTerm = 2, kTimer = 4 };
  int local_flags();

  CheckpointConfig cfg_;
  const Comm& comm_;
  Watchdog& watchdog_;
  std::string path_;
  Checkpoint identity_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  int send_ = 0, recv_ = 0;
  int stop_ = 0;
  std::chrono::steady_clock::time_point last_;
  int64_t written_ = 0;
  double last_write_s_ = 0;
  uint64_t last_bytes_ = 0;
};

}  // namespace hpdl
