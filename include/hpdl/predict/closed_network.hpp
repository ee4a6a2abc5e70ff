// A closed queueing network solved by exact Mean Value Analysis (Reiser & Lavenberg 1980):
// the parameter-server model of `hpdl predict` treats its W workers as W customers that
// cycle forever through a delay (their own compute) and the servers' shared resources (each
// server's incoming link, outgoing link and core), each a first-come-first-served station
// with a fixed demand per cycle. Where W is small the workers rarely meet; where it is large
// the busiest station sets the pace (cycle -> W x its demand); MVA gives the curve between.
#pragma once
#include <vector>

namespace hpdl {

struct ClosedNetwork {
  double cycle_s = 0;               // one customer's mean cycle: think + every residence
  std::vector<double> residence_s;  // per station: demand plus queueing, per cycle
  std::vector<double> utilization;  // per station: busy fraction (throughput x demand)
};

// `customers` >= 1 cycling through a delay of `think_s` and the stations with `demand_s`
// seconds of service per cycle each.
ClosedNetwork solve_closed_network(const std::vector<double>& demand_s, double think_s,
                                   int customers);

}  // namespace hpdl
