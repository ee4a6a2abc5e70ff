// Bounds every wait on other ranks. The trainer arms the watchdog around each collective;
// if one lasts longer than the limit, a background thread prints which rank, step and
// operation were stuck and ends this process, so mpirun/srun end the whole job instead of
// hanging until the wall-time limit. Arming costs one clock read and three atomic stores.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace hpdl {

class Watchdog {
 public:
  // limit_s <= 0 disables the watchdog (until set_limit gives it a positive limit).
  Watchdog(double limit_s, int rank);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Changes the limit, e.g. once the config that holds it has been read.
  void set_limit(double limit_s) { limit_s_.store(limit_s, std::memory_order_relaxed); }
  void arm(const char* op, int64_t step);
  void disarm();

 private:
  void watch();

  std::atomic<double> limit_s_;
  int rank_;
  std::atomic<int64_t> armed_at_ns_{0};  // 0 = not armed
  std::atomic<const char*> op_{""};
  std::atomic<int64_t> step_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Arms a watchdog for the lifetime of a scope.
class WatchdogScope {
 public:
  WatchdogScope(Watchdog& w, const char* op, int64_t step) : w_(w) { w_.arm(op, step); }
  ~WatchdogScope() { w_.disarm(); }

 private:
  Watchdog& w_;
};

}  // namespace hpdl
