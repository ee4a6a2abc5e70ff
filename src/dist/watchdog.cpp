// Watchdog thread: wakes twice a second and ends the process if a collective overstays.
// It never calls MPI (the library is initialised MPI_THREAD_FUNNELED); exiting without
// MPI_Finalize makes the launcher tear down the other ranks.
#include "hpdl/dist/watchdog.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace hpdl {
namespace {
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

Watchdog::Watchdog(double limit_s, int rank) : limit_s_(limit_s), rank_(rank) {
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::arm(const char* op, int64_t step) {
  op_.store(op, std::memory_order_relaxed);
  step_.store(step, std::memory_order_relaxed);
  armed_at_ns_.store(now_ns(), std::memory_order_release);
}

void Watchdog::disarm() { armed_at_ns_.store(0, std::memory_order_release); }

void Watchdog::watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; })) {
    const int64_t since = armed_at_ns_.load(std::memory_order_acquire);
    const double limit = limit_s_.load(std::memory_order_relaxed);
    if (since == 0 || limit <= 0) continue;
    const double waited = (now_ns() - since) * 1e-9;
    if (waited > limit) {
      std::fprintf(stderr,
                   "hpdl: error: rank %d waited %.0f s in %s at step %lld (limit "
                   "run.watchdog_s = %.0f s): another rank is late or gone\n",
                   rank_, waited, op_.load(), static_cast<long long>(step_.load()), limit);
      std::fflush(stderr);
      std::_Exit(3);
    }
  }
}

}  // namespace hpdl
