// The next batch, read on a thread of its own (see the header).
#include "hpdl/data/read_ahead.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {

// How long a side spins before it sleeps: longer than a small model's step (the MLP's
// is about 0.1 ms), short beside a long one's.
constexpr auto kSpin = std::chrono::milliseconds(2);

int64_t direct_per_sample(const H5Split& split) {  // checked before the thread starts
  HPDL_REQUIRE(split.direct(), "read-ahead needs a split read directly: " + split.where());
  return split.per_sample();
}

void pause() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

ReadAhead::ReadAhead(H5Split& split, int64_t batch)
    : split_(split),
      batch_(batch),
      per_sample_(direct_per_sample(split)),
      x_(static_cast<size_t>(batch * per_sample_)),
      y_(static_cast<size_t>(batch)),
      thread_([this] { run(); }) {}

ReadAhead::~ReadAhead() {
  stop_ = true;
  wake();
  thread_.join();
}

template <typename Pred>
void ReadAhead::await(const Pred& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0; !done(); ++i) {
    pause();
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) {
      // A waker that changed the state before it saw sleepers_ > 0 is seen by done() here;
      // one that sees it notifies under the mutex, so after this wait has begun.
      std::unique_lock lock(mutex_);
      ++sleepers_;
      cv_.wait(lock, done);
      --sleepers_;
      return;
    }
  }
}

void ReadAhead::wake() {
  if (sleepers_.load() == 0) return;
  std::lock_guard lock(mutex_);
  cv_.notify_all();
}

void ReadAhead::start(std::span<const int64_t> rows) {
  HPDL_REQUIRE(static_cast<int64_t>(rows.size()) <= batch_,
               "read-ahead of " + std::to_string(rows.size()) + " rows into a batch of " +
                   std::to_string(batch_));
  await([this] { return answered_.load() == asked_.load(); });
  rows_.assign(rows.begin(), rows.end());
  std::sort(rows_.begin(), rows_.end());
  ++asked_;
  wake();
}

bool ReadAhead::take(std::span<const int64_t> rows, float* x, int32_t* y) {
  const uint64_t asked = asked_.load();
  if (asked == taken_) return false;  // nothing started since the last take
  await([&] { return answered_.load() == asked; });
  if (!std::equal(rows.begin(), rows.end(), rows_.begin(), rows_.end())) return false;
  taken_ = asked;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  std::memcpy(x, x_.data(), rows.size() * per_sample_ * sizeof(float));
  std::memcpy(y, y_.data(), rows.size() * sizeof(int32_t));
  return true;
}

void ReadAhead::run() {
  for (;;) {
    await([this] { return stop_.load() || asked_.load() != answered_.load(); });
    const uint64_t asked = asked_.load();
    if (asked == answered_.load()) return;  // stopping, with nothing asked
    error_ = nullptr;
    try {
      split_.read_rows(rows_, x_.data(), y_.data());
    } catch (...) {
      error_ = std::current_exception();
    }
    answered_ = asked;
    wake();
  }
}

}  // namespace hpdl
