// The OpenMP thread count for one scope of a test, restored when it ends (also when an
// ASSERT returns early).
#pragma once
#include <omp.h>

namespace hpdl {

class OmpThreads {
 public:
  explicit OmpThreads(int threads) : before_(omp_get_max_threads()) {
    omp_set_num_threads(threads);
  }
  ~OmpThreads() { omp_set_num_threads(before_); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int before_;
};

}  // namespace hpdl
