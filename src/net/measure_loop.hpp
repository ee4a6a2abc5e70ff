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
// a transport may change protocol at a power of two, and a curve sampled only at powers of two
// puts every size between two of them on the dearer side's slope. Measured on 4 emulated
// hosts of a quarter core at 1 Gbit (OpenMPI's TCP transport; which of its limits or the
// link's makes the step was not found): an in-place Iallreduce of 248 KiB in 5.5 ms, of 252
// and 256 KiB in 8.3 and 7.9 ms; interpolated from 128 and 256 KiB (3.2 and 8.6 ms), a
// 196 KiB bucket cost 5.9 ms against the 4.5 ms it took.
std::vector<int64_t> sizes_below_powers(const std::vector<int64_t>& sizes, int64_t from);

// A barrier that sleeps while it waits: ranks not taking part in a measurement must not spin
// on the cores the measuring ranks need (several ranks may share a machine's cores), and a
// rank on a CPU budget must not spend its quota before the timed loop starts. It does not
// poll a watchdog: callers hold a WatchdogScope, whose thread ends a barrier a rank never
// reaches.
void quiet_barrier(MPI_Comm comm);

}  // namespace hpdl
