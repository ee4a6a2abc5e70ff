// A backend's clock for timing its own work. mark() takes a mark where the backend's work
// stands now; resolve() turns marks into steady-clock nanoseconds once the work before
// them has run. On a CPU a mark is the host clock and resolve() keeps it. A GPU backend
// records an event in its stream and resolves the events after the step, so a layer's
// time is its work on the device, not the time to launch it (the seed 001 thesis could
// not attribute 38-54 % of an iteration for timing launches).
#pragma once
#include <chrono>
#include <cstdint>

namespace hpdl {

class Timeline {
 public:
  virtual ~Timeline() = default;
  virtual int64_t mark() = 0;
  // In place: each of the n marks becomes its steady-clock time in nanoseconds.
  virtual void resolve(int64_t* marks, int64_t n) = 0;
  // Waits until all work enqueued so far has run (a GPU's stream has drained), so a host
  // clock read next covers it: every profiled step ends so, recorded or not.
  virtual void finish() = 0;
};

// The host's steady clock: a mark is already its time.
class HostTimeline final : public Timeline {
 public:
  static int64_t now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  int64_t mark() override { return now(); }
  void resolve(int64_t*, int64_t) override {}
  void finish() override {}
};

// The host's steady clock in seconds, for bounds on waits.
inline double steady_seconds() { return double(HostTimeline::now()) * 1e-9; }

}  // namespace hpdl
