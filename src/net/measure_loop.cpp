// What calibrate's measurement loops share (measure_loop.hpp).
#include "measure_loop.hpp"

#include <time.h>

#include "hpdl/comm/comm.hpp"

namespace hpdl {

std::vector<int64_t> sizes_up_to(int64_t first, int64_t max_bytes, int64_t factor) {
  std::vector<int64_t> s;
  for (int64_t b = first; b <= max_bytes; b *= factor) s.push_back(b);
  if (s.empty() || s.back() < max_bytes) s.push_back(max_bytes);
  return s;
}

std::vector<int64_t> sizes_below_powers(const std::vector<int64_t>& sizes, int64_t from) {
  std::vector<int64_t> s;
  for (int64_t b : sizes) {
    if (b >= from && (b & (b - 1)) == 0) s.push_back(b - b / 32);
    s.push_back(b);
  }
  return s;
}

void quiet_barrier(MPI_Comm comm) {
  MPI_Request req;
  HPDL_CHECK_MPI(MPI_Ibarrier(comm, &req));
  const timespec pause{0, 100000};  // 0.1 ms
  for (int done = 0;;) {
    HPDL_CHECK_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    nanosleep(&pause, nullptr);
  }
}

}  // namespace hpdl
