// Training state that differs from rank to rank in a synchronous run: compression's error
// feedback, and under local SGD each rank's parameters and inner optimizer state. A
// checkpoint keeps every rank's copy (rank 0 writes them as buffers "rank<k>.<name>"), and a
// resume, which runs on the same number of ranks (checkpoint identity), gives each rank its
// own back.
#pragma once
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/train/checkpoint.hpp"

namespace hpdl {

using RankState = std::vector<std::pair<std::string, std::vector<float>>>;

// Collective: every rank's `own` (the same names on every rank, in the same order) is sent
// to rank 0 and appended to c.buffers there as "rank<k>.<name>".
void gather_rank_state(const Comm& comm, const RankState& own, Checkpoint& c);
// This rank's saved values of `name` ("rank<r>.<name>"), or null when the checkpoint holds
// none (it was written by a run without that state).
const std::vector<float>* saved_rank_state(const Comm& comm, const Checkpoint& c,
                                           const std::string& name);

}  // namespace hpdl
