// What calibrate's measurement loops share (measure.cpp, after_compute.cpp): the series of
// sizes a curve walks, and the barrier that starts a timed loop.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <vector>

namespace hpdl {

// first, first * factor, ... up to max_bytes, and max_bytes itself where the series falls
// short of it.
std::vector<int64_t> sizes_up_to(int64_t first, int64_t max_bytes, int64_t factor = 8);

// `sizes` with one more just below each size from `from` up that is a power of two (s - s/32):
// a transport may change protocol at a power of two (emulated hosts at 1 Gbit took a step
// there whose cause was not found), and a curve sampled only at powers of two puts every size
// between two of them on the dearer side's slope. Measured: docs/results.md, "The allreduce
// curve timed just below each power of two".
std::vector<int64_t> sizes_below_powers(const std::vector<int64_t>& sizes, int64_t from);

// A barrier that sleeps while it waits: ranks not taking part in a measurement must not spin
// on the cores the measuring ranks need (several ranks may share a machine's cores), and a
// rank on a CPU budget must not spend its quota before the timed loop starts. It does not
// poll a watchdog: callers hold a WatchdogScope, whose thread ends a barrier a rank never
// reaches.
void quiet_barrier(MPI_Comm comm);

}  // namespace hpdl
