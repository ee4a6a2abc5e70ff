#include "hpdl/run/job_layout.hpp"

#include "hpdl/core/error.hpp"
#include "hpdl/data/sampler.hpp"

namespace hpdl {

int minimum_ranks(const Config& cfg) {
  return cfg.distributed.async() ? static_cast<int>(cfg.distributed.servers) + 1 : 1;
}

int64_t check_job_layout(const Config& cfg, const H5Split& train, int rank, int ranks) {
  HPDL_REQUIRE(train.size() >= ranks, "more ranks (" + std::to_string(ranks) +
                                          ") than training samples (" +
                                          std::to_string(train.size()) + ") in " + train.where());
  if (!cfg.distributed.async()) {
    const int64_t local = BatchPlan(train.size(), cfg.train.batch, rank, ranks).local_batch();
    const int64_t shards = cfg.distributed.virtual_shards;
    if (shards == 0) return local;
    HPDL_REQUIRE(shards % ranks == 0, "distributed.virtual_shards = " + std::to_string(shards) +
                                          " is not a multiple of the " + std::to_string(ranks) +
                                          " ranks (each rank takes virtual_shards / ranks shards)");
    return cfg.train.batch / shards;  // a pass runs one shard
  }
  const auto& d = cfg.distributed;
  HPDL_REQUIRE(ranks >= 2, "distributed.mode = \"" + std::string(word(d.mode)) +
                               "\" needs at least 2 ranks (1 server and 1 worker), got " +
                               std::to_string(ranks));
  HPDL_REQUIRE(d.servers < ranks, "distributed.servers = " + std::to_string(d.servers) +
                                      " leaves no worker among " + std::to_string(ranks) +
                                      " ranks (servers must be < ranks)");
  const int workers = ranks - static_cast<int>(d.servers);
  HPDL_REQUIRE(d.min_workers <= workers,
               "distributed.min_workers = " + std::to_string(d.min_workers) + " is more than the " +
                   std::to_string(workers) + " workers of this job");
  if (rank >= d.servers)
    ShardPlan(train.size(), cfg.train.batch, rank - static_cast<int>(d.servers), workers);
  return cfg.train.batch;  // every worker's own batch
}

}  // namespace hpdl
