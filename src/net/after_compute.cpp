// The allreduce after a burst of computing (see the header).
#include "hpdl/net/after_compute.hpp"

#include <time.h>

#include <algorithm>
#include <cstdint>

#include "hpdl/core/error.hpp"
#include "measure_loop.hpp"

namespace hpdl {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

namespace {

// Spins until this thread has had `cpu_s` of CPU: a step's compute, which under a budget
// takes cpu_s / share of wall time and meets the budget's pauses where they fall.
void compute_for(double cpu_s) {
  const double end = thread_cpu_s() + cpu_s;
  volatile uint64_t x = 0;
  while (thread_cpu_s() < end)
    for (int i = 0; i < 1000; ++i) x = x + 1;
}

// This rank's mean wall time of `reps` bursts, each followed by an allreduce of `bytes` (none
// at 0), from a barrier that sleeps (a rank that spun in it would spend quota the loop needs).
double loop_s(MPI_Comm comm, int64_t bytes, int reps, double burst_cpu_s, const Comm& waits,
              std::vector<float>& buf) {
  const int n = static_cast<int>(bytes / 4);
  quiet_barrier(comm);
  const double t0 = MPI_Wtime();
  for (int r = 0; r < reps; ++r) {
    compute_for(burst_cpu_s);
    if (n == 0) continue;
    MPI_Request req;
    HPDL_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, buf.data(), n, MPI_FLOAT, MPI_SUM, comm, &req));
    waits.wait_all(1, &req);
  }
  return (MPI_Wtime() - t0) / reps;
}

}  // namespace

bool next_size_fits(const std::vector<Sample>& samples, int64_t bytes, int reps, double limit_s) {
  // Up to 4 KiB always: any link moves that in a few ms, and under a CPU quota a small size
  // can meet a whole period's pause (8 ms at 64 or 512 B in CI runs), which read as a time
  // per byte stopped the curve there. Beyond, the lesser of the last two sizes' time per
  // byte, so that one such sample alone does not end it.
  if (bytes <= 4096) return true;
  const size_t n = samples.size();
  const auto per_byte = [&](size_t k) { return samples[k].seconds / double(samples[k].bytes); };
  const double per_byte_s = n == 0   ? 0
                            : n == 1 ? per_byte(0)
                                     : std::min(per_byte(n - 1), per_byte(n - 2));
  return reps * per_byte_s * double(bytes) <= limit_s;
}

std::vector<Sample> allreduce_after_compute(MPI_Comm comm, const CalibrateOptions& o,
                                            const Comm& waits, double burst_cpu_s) {
  // Twelve bursts a size: a loop's pauses come whole (a budget's period), and a mean over
  // twelve of them moves by about a tenth of one.
  constexpr int kReps = 12;
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  const int64_t largest = std::max<int64_t>(std::min<int64_t>(o.max_bytes, 1 << 20), 64);
  std::vector<float> buf(static_cast<size_t>(largest / 4), 1.0f);
  const double alone = loop_s(comm, 0, kReps, burst_cpu_s, waits, buf);
  double alone_sum = 0;
  HPDL_CHECK_MPI(MPI_Allreduce(&alone, &alone_sum, 1, MPI_DOUBLE, MPI_SUM, comm));
  std::vector<Sample> samples;
  for (int64_t bytes : sizes_up_to(64, largest)) {
    if (!next_size_fits(samples, bytes, kReps, 4 * o.budget_s)) break;
    const double with = loop_s(comm, bytes, kReps, burst_cpu_s, waits, buf);
    double slowest = 0;
    HPDL_CHECK_MPI(MPI_Allreduce(&with, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm));
    samples.push_back({bytes, std::max(0.0, slowest - alone_sum / ranks), kReps});
  }
  return samples;
}

}  // namespace hpdl
