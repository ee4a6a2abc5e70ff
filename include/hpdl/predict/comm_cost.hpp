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

}  // namespace hpdl
