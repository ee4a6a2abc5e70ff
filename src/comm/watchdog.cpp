// Watchdog thread: wakes twice a second, beats this rank's heartbeat, and ends the process
// if a wait that does not poll overstays. It never calls MPI (the library is initialised
// MPI_THREAD_FUNNELED): naming the late ranks takes MPI, so the main thread does it in
// poll(). Exiting without MPI_Finalize makes the launcher tear down the other ranks.
#include "hpdl/comm/watchdog.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "hpdl/comm/failure_relay.hpp"
#include "hpdl/comm/progress_board.hpp"

namespace hpdl {

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

void Watchdog::attach(ProgressBoard* board) {
  std::lock_guard<std::mutex> lock(mu_);
  board_ = board;
}

void Watchdog::arm(const char* op, int64_t step, AwaitedRanks awaited) {
  op_.store(op, std::memory_order_relaxed);
  step_.store(step, std::memory_order_relaxed);
  awaited_.store(awaited.who, std::memory_order_relaxed);
  awaited_reports_.store(awaited.reporter, std::memory_order_relaxed);
  if (board_) board_->publish(op, step, true);
  armed_at_ns_.store(running_ns(), std::memory_order_release);
}

void Watchdog::disarm() {
  armed_at_ns_.store(0, std::memory_order_release);
  if (board_) board_->publish(op_.load(), step_.load(), false);
}

void Watchdog::poll() {
  if (relay_) relay_->poll();
  const int64_t since = armed_at_ns_.load(std::memory_order_acquire);
  if (since == 0) return;
  const int64_t now = running_ns();
  polled_at_ns_.store(now, std::memory_order_relaxed);
  const double limit = limit_s_.load(std::memory_order_relaxed);
  const double waited = (now - since) * 1e-9;
  if (limit <= 0 || waited <= limit) return;
  naming_.store(true, std::memory_order_relaxed);
  if (!board_) expire(waited, "");
  const ProgressBoard::Verdict v = board_->name_late(op_.load(), step_.load());
  // Another rank reports; its exit ends the job (mpirun takes about 2 s to kill the other
  // ranks: SIGCONT, SIGTERM, SIGKILL a second apart). Should it not, this rank still does.
  if (!v.reporter) std::this_thread::sleep_for(std::chrono::seconds(3));
  expire(waited, v.text);
}

void Watchdog::expire(double waited, const std::string& late) const {
  // The thread and the main thread may both find the limit passed: one ends the process.
  if (expiring_.exchange(true)) {
    std::this_thread::sleep_for(std::chrono::seconds(30));
    std::_Exit(3);
  }
  const char* awaited = awaited_.load(std::memory_order_relaxed);
  std::string named = late;
  if (named.empty() && awaited) {
    named = "no answer from " + std::string(awaited) + " (stopped, hung or gone)";
    if (!awaited_reports_.load(std::memory_order_relaxed))
      std::this_thread::sleep_for(std::chrono::seconds(3));
  }
  char line[160];
  std::snprintf(line, sizeof line,
                "rank %d waited %.0f s in %s at step %lld (limit run.watchdog_s = %.0f s): ", rank_,
                waited, op_.load(), static_cast<long long>(step_.load()), limit_s_.load());
  const std::string error = line + (named.empty() ? "another rank is late or gone" : named);
  std::fprintf(stderr, "hpdl: error: %s\n", error.c_str());
  std::fflush(stderr);
  if (hook_) try {
      hook_(error);
    } catch (...) {  // the line above is what counts; the files are a courtesy
    }
  std::_Exit(3);
}

void Watchdog::watch() {
  // How long a wait that polls gets, past the limit, to name the late ranks itself: two
  // bounded reads of the board (1 s each), the 1.2 s between them, and a non-reporting
  // rank's 3 s (the reporting rank ends the job within the limit + 5 s).
  constexpr double kNamingGrace_s = 6.5;
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; })) {
    if (board_) board_->beat();
    const int64_t now = running_ns();  // read every tick: a longer gap is frozen time
    const int64_t since = armed_at_ns_.load(std::memory_order_acquire);
    const double limit = limit_s_.load(std::memory_order_relaxed);
    if (since == 0 || limit <= 0) continue;
    const double waited = (now - since) * 1e-9;
    if (waited <= limit) continue;
    const bool polling = naming_.load(std::memory_order_relaxed) ||
                         now - polled_at_ns_.load(std::memory_order_relaxed) < 1'000'000'000;
    if (board_ && polling && waited <= limit + kNamingGrace_s) continue;
    expire(waited, "");
  }
}

}  // namespace hpdl
