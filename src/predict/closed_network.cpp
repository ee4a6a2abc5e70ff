// Exact Mean Value Analysis (see the header): for n = 1..N customers, a station's residence
// is its demand times (1 + the queue an arriving customer finds, which is the queue at
// n - 1 customers: the arrival theorem); throughput follows from Little's law.
#include "hpdl/predict/closed_network.hpp"

#include <cstddef>
#include <numeric>

namespace hpdl {

ClosedNetwork solve_closed_network(const std::vector<double>& demand_s, double think_s,
                                   int customers) {
  ClosedNetwork r;
  const size_t k = demand_s.size();
  std::vector<double> queue(k, 0.0);
  r.residence_s.assign(k, 0.0);
  double throughput = 0;
  for (int n = 1; n <= customers; ++n) {
    for (size_t i = 0; i < k; ++i) r.residence_s[i] = demand_s[i] * (1 + queue[i]);
    r.cycle_s = think_s + std::accumulate(r.residence_s.begin(), r.residence_s.end(), 0.0);
    throughput = r.cycle_s > 0 ? n / r.cycle_s : 0;
    for (size_t i = 0; i < k; ++i) queue[i] = throughput * r.residence_s[i];
  }
  r.utilization.resize(k);
  for (size_t i = 0; i < k; ++i) r.utilization[i] = throughput * demand_s[i];
  return r;
}

}  // namespace hpdl
