// Deterministic epoch permutations (Fisher-Yates on a counter-based generator).
#include "hpdl/data/sampler.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "hpdl/core/error.hpp"
#include "hpdl/core/rng.hpp"

namespace hpdl {

BatchPlan::BatchPlan(int64_t rows, int64_t global_batch, int rank, int ranks)
    : rows_(rows), global_batch_(global_batch) {
  HPDL_REQUIRE(global_batch >= ranks, "train.batch = " + std::to_string(global_batch) +
                                          " is smaller than the number of ranks (" +
                                          std::to_string(ranks) + "): a rank would get no sample");
  HPDL_REQUIRE(rows >= global_batch, "the training data holds " + std::to_string(rows) +
                                         " samples, fewer than one batch (train.batch = " +
                                         std::to_string(global_batch) + ")");
  const int64_t base = global_batch / ranks, extra = global_batch % ranks;
  local_batch_ = base + (rank < extra ? 1 : 0);
  local_offset_ = rank * base + std::min<int64_t>(rank, extra);
  perm_.resize(rows);
  local_.resize(local_batch_);
}

void epoch_permutation(uint64_t seed, int64_t epoch, std::vector<int64_t>& perm) {
  std::iota(perm.begin(), perm.end(), 0);
  Rng rng(seed, 0x5a5a0000ULL + static_cast<uint64_t>(epoch));
  for (int64_t i = static_cast<int64_t>(perm.size()) - 1; i > 0; --i)
    std::swap(perm[i], perm[rng.below(i + 1)]);
}

void BatchPlan::begin_epoch(uint64_t seed, int64_t epoch) { epoch_permutation(seed, epoch, perm_); }

std::span<const int64_t> BatchPlan::local_rows(int64_t step) {
  const int64_t* first = perm_.data() + step * global_batch_ + local_offset_;
  std::copy(first, first + local_batch_, local_.begin());
  std::sort(local_.begin(), local_.end());
  return local_;
}

std::span<const int64_t> BatchPlan::shard_rows(int64_t step, int64_t shard, int64_t shards) {
  const int64_t size = global_batch_ / shards;
  const int64_t* first = perm_.data() + step * global_batch_ + shard * size;
  shard_.assign(first, first + size);
  std::sort(shard_.begin(), shard_.end());
  return shard_;
}

ShardPlan::ShardPlan(int64_t rows, int64_t batch, int worker, int workers)
    : batch_(batch), perm_(rows), local_(batch) {
  block_range(rows, worker, workers, &begin_, &end_);
  HPDL_REQUIRE(
      end_ - begin_ >= batch,
      "worker " + std::to_string(worker) + " of " + std::to_string(workers) + " gets " +
          std::to_string(end_ - begin_) +
          " training samples, fewer than one batch (train.batch = " + std::to_string(batch) + ")");
}

void ShardPlan::begin_epoch(uint64_t seed, int64_t epoch) { epoch_permutation(seed, epoch, perm_); }

std::span<const int64_t> ShardPlan::rows(int64_t step) {
  const int64_t* first = perm_.data() + begin_ + step * batch_;
  std::copy(first, first + batch_, local_.begin());
  std::sort(local_.begin(), local_.end());
  return local_;
}

void block_range(int64_t rows, int rank, int ranks, int64_t* begin, int64_t* end) {
  const int64_t base = rows / ranks, extra = rows % ranks;
  *begin = rank * base + std::min<int64_t>(rank, extra);
  *end = *begin + base + (rank < extra ? 1 : 0);
}

}  // namespace hpdl
