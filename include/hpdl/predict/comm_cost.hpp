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
// per chunk two barriers of ceil(log2 ranks) intra-host latencies, plus the memory traffic
// of copying in, summing a slice over every rank's copy and copying the others' slices out
// (5 bytes per gradient byte) at the calibrated reduction rate (3 bytes per byte).
AllreduceCost node_sum_cost(const NetworkModel& net, int64_t bytes, int ranks);
// What an allreduce of `bytes` costs beyond allreduce_cost when it follows `compute_cpu_s`
// CPU seconds of compute on ranks whose CPU pauses (local SGD's average on budgeted hosts):
// the calibrated curve after bursts of compute (net/after_compute.hpp) less allreduce_cost,
// in proportion to the compute up to the calibration's bursts (an interval shorter than a
// budget's slice leaves some quota to the exchange). 0 where no such curve was measured for
// `ranks`. Sizes outside the curve take its nearest size's excess.
double after_compute_excess_s(const NetworkModel& net, int64_t bytes, int ranks, int ranks_per_host,
                              double compute_cpu_s);

}  // namespace hpdl
