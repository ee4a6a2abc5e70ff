// Which rows each rank trains on. Every epoch has one global permutation of the training
// rows, a pure function of (seed, epoch); global batch s is permutation[s*B, (s+1)*B) and
// rank r takes a contiguous slice of it (sizes differ by at most one when R does not
// divide B). The union over ranks is exactly the batch one rank would take alone.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace hpdl {

class BatchPlan {
 public:
  // Throws Error when a rank would get no sample or the data holds less than one batch.
  BatchPlan(int64_t rows, int64_t global_batch, int rank, int ranks);

  void begin_epoch(uint64_t seed, int64_t epoch);
  int64_t steps_per_epoch() const { return rows_ / global_batch_; }  // last partial batch dropped
  int64_t local_batch() const { return local_batch_; }
  int64_t global_batch() const { return global_batch_; }
  // This rank's rows of step s of the current epoch, ascending.
  std::span<const int64_t> local_rows(int64_t step);
  // Shard k of `shards` of step s's global batch (rows [k * B / shards, (k + 1) * B /
  // shards) of it), ascending: the same rows whatever the rank count (distributed.virtual_shards).
  std::span<const int64_t> shard_rows(int64_t step, int64_t shard, int64_t shards);
  // The same rows unsorted, without touching local_rows's buffer (empty past the epoch's end).
  std::span<const int64_t> upcoming_rows(int64_t step) const {
    if (step >= steps_per_epoch()) return {};
    return {perm_.data() + step * global_batch_ + local_offset_, static_cast<size_t>(local_batch_)};
  }

 private:
  int64_t rows_, global_batch_, local_batch_, local_offset_;
  std::vector<int64_t> perm_, local_, shard_;
};

// Parameter-server workers: each worker owns a contiguous slice of the epoch's global
// permutation (block_range of the rows) and takes batches of `batch` rows from it, so
// workers see disjoint data and may run different numbers of steps. With one worker this
// is exactly BatchPlan on one rank.
class ShardPlan {
 public:
  // Throws Error when the worker's slice holds less than one batch.
  ShardPlan(int64_t rows, int64_t batch, int worker, int workers);

  void begin_epoch(uint64_t seed, int64_t epoch);
  int64_t steps_per_epoch() const { return (end_ - begin_) / batch_; }
  int64_t batch() const { return batch_; }
  std::span<const int64_t> rows(int64_t step);

 private:
  int64_t batch_, begin_ = 0, end_ = 0;
  std::vector<int64_t> perm_, local_;
};

// The permutation of [0, rows) for (seed, epoch) that every plan shares.
void epoch_permutation(uint64_t seed, int64_t epoch, std::vector<int64_t>& perm);

// The contiguous block [begin, end) of `rows` that rank r of R owns (for evaluation and
// validation scans).
void block_range(int64_t rows, int rank, int ranks, int64_t* begin, int64_t* end);

}  // namespace hpdl
