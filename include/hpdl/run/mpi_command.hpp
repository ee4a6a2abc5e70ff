// What every MPI subcommand (train, eval) does around its body: MPI start-up and shut-down,
// errors that all ranks agreed on printed once by rank 0, an error on one rank alone ending
// the job the same way (FailureRelay: one line, exit 1 on every rank); and set-up stages
// that every rank passes or fails together.
#pragma once
#include <functional>
#include <string>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"

namespace hpdl {

// Initialises MPI, runs body(world) on every rank, finalises. Returns body's exit code, or
// 1 after an error (printed once, "hpdl: error: ..."; a rank's own error is relayed to
// rank 0, which ends the job).
int run_under_mpi(int* argc, char*** argv, const std::function<int(Comm&)>& body);

// Runs f on every rank; if it throws on any rank, all ranks throw the first rank's message.
// The agreement waits for the slowest rank, bounded by the watchdog.
template <typename F>
void on_all_ranks(const Comm& comm, Watchdog& watchdog, F&& f) {
  std::string err;
  try {
    f();
  } catch (const std::exception& e) {
    err = e.what();
  }
  WatchdogScope guard(watchdog, "set-up agreement", 0);
  comm.agree(err);
}

}  // namespace hpdl
