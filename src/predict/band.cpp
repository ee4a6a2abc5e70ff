// The range of a forecast (predictor.hpp's predict_with_band).
#include <algorithm>
#include <cmath>

#include "hpdl/core/sample_stats.hpp"
#include "hpdl/predict/predictor.hpp"

namespace hpdl {
namespace {

// The profile with every compute part multiplied by `f`.
StepProfile scaled_compute(StepProfile p, double f) {
  for (double& t : p.forward_s) t *= f;
  for (double& t : p.backward_s) t *= f;
  for (double& t : p.forward_call_s) t *= f;
  for (double& t : p.backward_call_s) t *= f;
  p.data_call_s *= f, p.loss_call_s *= f;
  for (double& t : p.compute_s) t *= f;
  p.data_s *= f, p.loss_s *= f, p.update_s *= f, p.other_s *= f, p.worker_compute_s *= f;
  return p;
}

}  // namespace

Prediction predict_with_band(const StepProfile& p, const NetworkModel& net, int ranks,
                             const PredictOptions& o) {
  Prediction r = predict_step(p, net, ranks, o);
  PredictOptions ends = o;  // whole pauses at the ends, not the last rank's expected one
  ends.last_ranks_pause = false;
  const double mid = sample_stats::quantile(p.compute_s, 0.5);
  double fast = mid > 0 ? sample_stats::quantile(p.compute_s, 0.05) / mid : 1.0;
  double slow = mid > 0 ? sample_stats::quantile(p.compute_s, 0.95) / mid : 1.0;
  // A budget of q < 1 core runs a thread for a slice, then pauses it for slice (1/q - 1):
  // the forecast's compute c/q is an average over many steps, and one step meets a pause
  // fewer or one more than that average (a step shorter than a slice may meet none).
  const double q = thread_share(p, o, std::min(ranks, o.ranks_per_host));
  if (q < 1 && net.cpu_slice_s > 0 && r.compute_s > 0) {
    const double mean = r.compute_s - r.budget_wait_s;
    const double run = mean * q, pause = net.cpu_slice_s * (1 / q - 1);
    const double pauses = run / net.cpu_slice_s;
    fast *= (run + std::floor(pauses) * pause) / mean;
    slow *= (run + std::ceil(pauses) * pause) / mean;
  }
  // A parameter-server worker's transfers are charged to its budget (ps_step.cpp): at the
  // fast end they are not; at the slow end as their slow time comes out.
  NetworkModel fast_net = scaled_links(net, net.fast_links);
  NetworkModel slow_net = scaled_links(net, net.slow_links);
  if (p.async()) fast_net.cpu_slice_s = 0;
  fast_net.after_compute.clear();  // local SGD's average as back-to-back allreduces measure it
  r.step_s_low = predict_step(scaled_compute(p, fast), fast_net, ranks, ends).step_s;
  r.step_s_high = predict_step(scaled_compute(p, slow), slow_net, ranks, ends).step_s;
  return r;
}

}  // namespace hpdl
