// The checks that depend on the job's size: the same code for `hpdl train` (its own rank)
// and `hpdl check --ranks N` (every rank), so check refuses exactly what train refuses.
#pragma once
#include <cstdint>

#include "hpdl/config/config.hpp"
#include "hpdl/data/dataset.hpp"

namespace hpdl {

// The fewest ranks the config's mode runs on: 1 (sync), servers + 1 (parameter server).
int minimum_ranks(const Config& cfg);

// Checks rank `rank` of `ranks` against the training split (its samples per rank, the
// batch, the parameter-server layout) and returns its local batch (the rows of one pass: a
// shard's with distributed.virtual_shards). Throws Error naming the key at fault.
int64_t check_job_layout(const Config& cfg, const H5Split& train, int rank, int ranks);

}  // namespace hpdl
