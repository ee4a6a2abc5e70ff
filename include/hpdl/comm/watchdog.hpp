// Bounds every wait on other ranks. The trainer arms the watchdog around each collective.
// Waits that poll (Comm's collectives, the gradient reducer, the parameter server's loops)
// call poll(): once the armed wait outlasts the limit, poll() names the ranks that did not
// arrive (ProgressBoard) and ends this process, so mpirun/srun end the whole job instead of
// hanging until the wall-time limit. A wait that cannot poll (a blocking RMA lock) is ended
// by a background thread with a shorter message. Arming costs one clock read and a few
// stores; poll() one clock read. Time this process did not run at all (kill -STOP, a Slurm
// suspend) does not count against a wait: a resumed job is not ended for it.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "hpdl/core/running_clock.hpp"

namespace hpdl {

class FailureRelay;
class ProgressBoard;

// A wait on particular ranks that may block without polling (one-sided operations on the
// parameter servers): who they are, for the line when it expires ("no answer from rank 0,
// the parameter server"), and whether this rank reports it. Several ranks blocked on the
// same ranks would each print a line: the others stay silent 3 s, by which time the
// reporter's exit has ended the job. `who` must outlive the wait.
struct AwaitedRanks {
  const char* who = nullptr;
  bool reporter = true;
};

class Watchdog {
 public:
  // limit_s <= 0 disables the watchdog (until set_limit gives it a positive limit).
  Watchdog(double limit_s, int rank);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Changes the limit, e.g. once the config that holds it has been read.
  void set_limit(double limit_s) { limit_s_.store(limit_s, std::memory_order_relaxed); }
  double limit_s() const { return limit_s_.load(std::memory_order_relaxed); }
  // Publishes this rank's waits on the board and beats its heartbeat; nullptr detaches
  // (before the board is closed). Main thread only.
  void attach(ProgressBoard* board);
  // Lets every poll() also end this process when another rank failed alone (the job's
  // agreed ending, FailureRelay; Comm::bound_waits_by passes its own); nullptr: only the
  // limit ends waits. Main thread only.
  void relay_failures(FailureRelay* relay) { relay_ = relay; }
  void arm(const char* op, int64_t step, AwaitedRanks awaited = AwaitedRanks());
  void disarm();
  // From the main thread inside a wait loop: ends the process, naming the late ranks, once
  // the armed wait has outlasted the limit.
  void poll();
  // Runs once, with the error (without "hpdl: error: "), when a wait has outlasted the limit,
  // just before the process ends: the run directory's manifest and log say how it ended.
  // From the watchdog's thread or the main thread; nullptr removes it. Set while no wait is
  // armed.
  void on_expire(std::function<void(const std::string&)> hook) { hook_ = std::move(hook); }

 private:
  void watch();
  // Stands still while the process is frozen (the thread reads it every 0.5 s).
  int64_t running_ns() { return clock_.now_ns(); }
  [[noreturn]] void expire(double waited, const std::string& late) const;

  std::atomic<double> limit_s_;
  int rank_;
  std::atomic<int64_t> armed_at_ns_{0};  // 0 = not armed
  std::atomic<const char*> op_{""};
  std::atomic<int64_t> step_{0};
  std::atomic<const char*> awaited_{nullptr};
  std::atomic<bool> awaited_reports_{true};
  std::atomic<int64_t> polled_at_ns_{0};  // the main thread's last poll()
  RunningClock clock_;
  std::atomic<bool> naming_{false};  // poll() is reading the board
  ProgressBoard* board_ = nullptr;   // written under mu_, which the thread holds while awake
  FailureRelay* relay_ = nullptr;    // main thread only
  std::function<void(const std::string&)> hook_;
  mutable std::atomic<bool> expiring_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Arms a watchdog for the lifetime of a scope.
class WatchdogScope {
 public:
  WatchdogScope(Watchdog& w, const char* op, int64_t step, AwaitedRanks awaited = AwaitedRanks())
      : w_(w) {
    w_.arm(op, step, awaited);
  }
  ~WatchdogScope() { w_.disarm(); }

 private:
  Watchdog& w_;
};

}  // namespace hpdl
