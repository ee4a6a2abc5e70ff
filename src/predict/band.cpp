// The range of a forecast (predictor.hpp's predict_with_band).
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
  const double fast = mid > 0 ? predict_stats::quantile(p.compute_s, 0.05) / mid : 1.0;
  const double slow = mid > 0 ? predict_stats::quantile(p.compute_s, 0.95) / mid : 1.0;
  r.step_s_low =
      predict_step(scaled_compute(p, fast), scaled_links(net, net.fast_links), ranks, o).step_s;
  r.step_s_high =
      predict_step(scaled_compute(p, slow), scaled_links(net, net.slow_links), ranks, o).step_s;
  return r;
}

}  // namespace hpdl
