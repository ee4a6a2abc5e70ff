// The next batch read on a thread of its own while the caller's step computes: for a rank
// whose kernels run on one thread (a small model) beside a core that would otherwise wait.
// Only on a split read directly (H5Split::direct: memcpy from the mapping or pread, never
// the HDF5 library, which this build does not make thread-safe); while a read is in flight
// nobody else reads that split. Each side spins a while before it sleeps: waking a thread
// that sleeps cost 10-16 us on a virtual machine, as much as the read itself.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "hpdl/data/dataset.hpp"

namespace hpdl {

class ReadAhead {
 public:
  // Batches of at most `batch` rows of `split` (which must be direct()).
  ReadAhead(H5Split& split, int64_t batch);
  ~ReadAhead();  // waits for a read in flight
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // Starts reading `rows` (any order; read ascending, as H5Split::read_rows takes them) into
  // this object's buffers; waits first for a read still in flight.
  void start(std::span<const int64_t> rows);
  // Waits for the read started last. If it read exactly `rows` (ascending) and was not taken
  // yet, copies them into x and y and returns true (rethrowing the error the read met, if
  // any); otherwise returns false and the caller reads them itself.
  bool take(std::span<const int64_t> rows, float* x, int32_t* y);

 private:
  void run();  // the reading thread
  template <typename Pred>
  void await(const Pred& done);  // spins a while, then sleeps until done()
  void wake();                   // after a change another side may await

  H5Split& split_;
  const int64_t batch_, per_sample_;
  std::vector<int64_t> rows_;  // the rows read (or being read): written only between reads
  std::vector<float> x_;
  std::vector<int32_t> y_;
  std::exception_ptr error_;
  std::atomic<uint64_t> asked_{0}, answered_{0};  // reads started, reads done
  uint64_t taken_ = 0;                            // the caller's: the read taken last
  std::atomic<bool> stop_{false};
  std::atomic<int> sleepers_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_;  // last: starts once the rest exists
};

}  // namespace hpdl
