// The cost of communication in `hpdl predict`: one allreduce (measured curve, else the
// cheapest analytic algorithm) and one RMA operation (calibrated sizes, else the link fit).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hpdl/predict/network_model.hpp"

namespace hpdl {

struct AllreduceCost {
  double seconds = 0;
  int rounds = 1;
  std::string how;  // "measured" or the analytic algorithm
};
AllreduceCost allreduce_cost(const NetworkModel& net, int64_t bytes, int ranks, int ranks_per_host);

// One RMA operation (lock, get or accumulate, unlock) of `bytes`: log-log interpolation in
// the calibrated sizes `s` (beyond the largest, its last segment's time per byte), else the
// inter-host point-to-point fit.
double rma_op_s(const std::vector<std::pair<int64_t, double>>& s, const NetworkModel& net,
                double bytes);

}  // namespace hpdl
