// The allreduce as local SGD's average meets it: right after a stretch of computing. On a
// host with a CPU budget a rank that computes spends its quota up to the exchange, and the
// exchange waits out whichever rank's quota runs dry inside it; back-to-back allreduces (the
// calibration's iallreduce curve) leave every rank's quota to the exchange and read a
// fraction of that (docs/results.md, "local SGD's average after compute"). `hpdl calibrate`
// measures this curve where a rank's CPU pauses (a budget, or cores shared), and `hpdl
// predict` costs local SGD's average with it.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/net/calibration.hpp"

namespace hpdl {

// This thread's CPU seconds so far (CLOCK_THREAD_CPUTIME_ID).
double thread_cpu_s();

// Collective over comm: for sizes 64 B .. min(max_bytes, 1 MiB), 8x apart, the wall time an
// MPI_Iallreduce (polled by `waits`, as the trainer's) adds to a loop of bursts of
// `burst_cpu_s` CPU seconds: the slowest rank's loop with the allreduce after each burst,
// less the ranks' mean loop without it, per repetition. Stops before a size whose twelve
// allreduces would take over 4 x budget_s (its bursts come on top of the operations the
// budget is for), by next_size_fits.
std::vector<Sample> allreduce_after_compute(MPI_Comm comm, const CalibrateOptions& o,
                                            const Comm& waits, double burst_cpu_s);

// Whether `reps` allreduces of `bytes` fit in `limit_s`: yes up to 4 KiB, beyond by the lesser
// time per byte of the last two samples (one sample that met a pause does not end a curve).
bool next_size_fits(const std::vector<Sample>& samples, int64_t bytes, int reps, double limit_s);

}  // namespace hpdl
