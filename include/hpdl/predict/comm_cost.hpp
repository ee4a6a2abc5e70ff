// The cost of communication in `hpdl predict`: one allreduce (measured curve, else the
// cheapest analytic algorithm). (The parameter server's transfers: ps_step.cpp.)
#pragma once
#include <cstdint>
#include <string>

#include "hpdl/predict/network_model.hpp"

namespace hpdl {

struct AllreduceCost {
  double seconds = 0;
  int rounds = 1;
  std::string how;  // "measured" or the analytic algorithm
};
AllreduceCost allreduce_cost(const NetworkModel& net, int64_t bytes, int ranks, int ranks_per_host);
// The sum through shared memory of ranks that all share one host (dist/grad_reducer.hpp):
// per chunk two barriers of ceil(log2 ranks) intra-host latencies, and about three passes
// over the bytes at the calibrated reduction rate (copy in, sum a slice over every rank's
// copy, copy the others' slices out).
AllreduceCost node_sum_cost(const NetworkModel& net, int64_t bytes, int ranks);

}  // namespace hpdl
