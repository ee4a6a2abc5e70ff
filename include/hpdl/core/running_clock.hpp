// A steady clock that stands still while the process is frozen (kill -STOP, a Slurm suspend,
// a host stalled): a gap of over `frozen_gap` between two readings is taken as time the
// process did not run, and not counted. Whoever bounds a wait by it reads it more often than
// the gap (a background thread every 0.25-0.5 s), so only a freeze leaves such a gap. Safe
// to read from several threads.
#pragma once
#include <atomic>
#include <cstdint>

#include "hpdl/core/timeline.hpp"

namespace hpdl {

class RunningClock {
 public:
  explicit RunningClock(int64_t frozen_gap_ns = 1'500'000'000) : frozen_gap_ns_(frozen_gap_ns) {}

  // Nanoseconds of a steady clock less the frozen time seen so far.
  int64_t now_ns() {
    const int64_t now = HostTimeline::now();
    int64_t seen = seen_ns_.load(std::memory_order_relaxed);
    while (now > seen) {
      if (seen_ns_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
        if (seen > 0 && now - seen > frozen_gap_ns_)
          frozen_ns_.fetch_add(now - seen, std::memory_order_relaxed);
        break;
      }
    }
    return now - frozen_ns_.load(std::memory_order_relaxed);
  }

 private:
  int64_t frozen_gap_ns_;
  std::atomic<int64_t> seen_ns_{0};    // the latest steady-clock reading
  std::atomic<int64_t> frozen_ns_{0};  // time the process was frozen
};

}  // namespace hpdl
