// The range of a forecast (predictor.hpp's predict_with_band).
#include <algorithm>
#include <cmath>

#include "hpdl/predict/predictor.hpp"
#include "stats.hpp"

namespace hpdl {
namespace {

// The profile with every compute part multiplied by `f`.
StepProfile scaled_compute(StepProfile p, double f) {
  for (double& t : p.forward_s) t *= f;
  for (double& t : p.backward_s) t *= f;
  for (double& t : p.compute_s) t *= f;
  p.data_s *= f, p.loss_s *= f, p.update_s *= f, p.other_s *= f, p.worker_compute_s *= f;
  return p;
}

}  // namespace

Prediction predict_with_band(const StepProfile& p, const NetworkModel& net, int ranks,
                             const PredictOptions& o) {
  Prediction r = predict_step(p, net, ranks, o);
  const double mid = predict_stats::quantile(p.compute_s, 0.5);
  double fast = mid > 0 ? predict_stats::quantile(p.compute_s, 0.05) / mid : 1.0;
  double slow = mid > 0 ? predict_stats::quantile(p.compute_s, 0.95) / mid : 1.0;
  double slow_links = net.slow_links;
  // A budget of q < 1 core runs a thread for a slice, then pauses it for slice (1/q - 1):
  // the forecast's compute c/q is an average over many steps, and one step meets a pause
  // fewer or one more than that average (a step shorter than a slice may meet none).
  const double q = thread_share(p, o, std::min(ranks, o.ranks_per_host));
  if (q < 1 && net.cpu_slice_s > 0 && r.compute_s > 0) {
    const double run = r.compute_s * q, pause = net.cpu_slice_s * (1 / q - 1);
    const double pauses = run / net.cpu_slice_s;
    fast *= (run + std::floor(pauses) * pause) / r.compute_s;
    slow *= (run + std::ceil(pauses) * pause) / r.compute_s;
    // A parameter-server worker spins inside MPI's blocking one-sided calls: a transfer
    // shorter than a slice runs while it runs and spends its quota (its time over the
    // share at the slow end); a longer one goes on in the kernel while it is paused.
    if (p.async() && p.servers > 0) {
      const bool one_host = (ranks + o.ranks_per_host - 1) / o.ranks_per_host <= 1;
      const double bandwidth = one_host ? net.intra_bandwidth_Bps : net.inter_bandwidth_Bps;
      const double latency = one_host ? net.intra_latency_s : net.inter_latency_s;
      const double transfer = latency + double(p.param_bytes) / p.servers / bandwidth;
      if (transfer < net.cpu_slice_s) slow_links /= q;
    }
  }
  r.step_s_low =
      predict_step(scaled_compute(p, fast), scaled_links(net, net.fast_links), ranks, o).step_s;
  r.step_s_high =
      predict_step(scaled_compute(p, slow), scaled_links(net, slow_links), ranks, o).step_s;
  return r;
}

}  // namespace hpdl
