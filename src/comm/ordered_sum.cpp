// Comm::ordered_sum: a sum whose bits do not depend on the rank count. MPI's allreduce adds
// the ranks' vectors in an order of its own choosing (and a rank's vector is already the
// sum of its rows), so 2 ranks and 4 ranks give different bits. Here the vectors are the
// fixed shards of the global batch: rank q receives every shard's q-th slice of elements
// (one all-to-all), adds the shards in shard order, element by element, and every rank
// gathers the summed slices (one all-gather). Which rank adds a slice changes nothing.
#include <climits>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/core/error.hpp"

namespace hpdl {

void Comm::ordered_sum(const float* mine, int64_t n, int shards, float* sum) const {
  const int per = shards / size_;  // shards a rank holds
  HPDL_REQUIRE(shards > 0 && per * size_ == shards, "ordered_sum: shards not a multiple of ranks");
  auto begin = [&](int q) { return n * q / size_; };  // rank q sums elements [begin(q), begin(q+1))
  const int64_t own = begin(rank_ + 1) - begin(rank_);
  HPDL_REQUIRE(per * n < INT_MAX && static_cast<int64_t>(shards) * (n / size_ + 1) < INT_MAX,
               "ordered_sum: more than 2^31 floats from or to one rank");

  // Send to rank q my shards' elements of slice q, shard after shard.
  std::vector<float> out(static_cast<size_t>(per * n)), in(static_cast<size_t>(shards * own));
  std::vector<int> send_counts(size_), send_offsets(size_), recv_counts(size_), recv_offsets(size_);
  int64_t at = 0;
  for (int q = 0; q < size_; ++q) {
    const int64_t len = begin(q + 1) - begin(q);
    send_offsets[q] = static_cast<int>(at);
    send_counts[q] = static_cast<int>(per * len);
    for (int j = 0; j < per; ++j)
      for (int64_t i = 0; i < len; ++i) out[at++] = mine[j * n + begin(q) + i];
    recv_counts[q] = static_cast<int>(per * own);
    recv_offsets[q] = static_cast<int>(q * per * own);
  }
  MPI_Request r;
  HPDL_CHECK_MPI(MPI_Ialltoallv(out.data(), send_counts.data(), send_offsets.data(), MPI_FLOAT,
                                in.data(), recv_counts.data(), recv_offsets.data(), MPI_FLOAT,
                                comm_, &r));
  wait(r);

  // `in` holds shard k = p * per + j at k * own: add the shards in order.
  std::vector<float> mine_summed(static_cast<size_t>(own));
  for (int64_t i = 0; i < own; ++i) {
    float acc = in[i];
    for (int k = 1; k < shards; ++k) acc += in[k * own + i];
    mine_summed[i] = acc;
  }
  std::vector<int> counts(size_), offsets(size_);
  for (int q = 0; q < size_; ++q) {
    counts[q] = static_cast<int>(begin(q + 1) - begin(q));
    offsets[q] = static_cast<int>(begin(q));
  }
  HPDL_CHECK_MPI(MPI_Iallgatherv(mine_summed.data(), static_cast<int>(own), MPI_FLOAT, sum,
                                 counts.data(), offsets.data(), MPI_FLOAT, comm_, &r));
  wait(r);
}

}  // namespace hpdl
