// Per-call and per-sample parts of a profile's times (see the header).
#include "hpdl/predict/batch_split.hpp"

#include <algorithm>
#include <cmath>

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {

// The part of `t` (at batch b) that a call costs, from `u` at batch c: the line through
// both, at batch 0, within [0, t] (a smaller batch that took longer is all per-call).
double per_call(double t, double b, double u, double c) {
  const double per_sample = (t - u) / (b - c);
  return std::clamp(t - per_sample * b, 0.0, t);
}

double at(double t, double call, double scale) { return call + (t - call) * scale; }

}  // namespace

void split_per_call(StepProfile& p, const StepProfile& other, const std::string& other_dir) {
  const std::string what = "--batch-profile " + other_dir + ": ";
  if (p.async() || other.async())
    throw Error(what +
                "both runs must be synchronous (a parameter server's worker keeps its batch)");
  if (other.layers != p.layers)
    throw Error(what + "its model has " + std::to_string(other.layers.size()) +
                " layers, not the " + std::to_string(p.layers.size()) + " of " + p.name +
                "'s (profile the same model)");
  if (other.local_batch == p.local_batch)
    throw Error(what + "its local batch is " + std::to_string(p.local_batch) +
                " as well (profile it at another train.batch)");
  if (p.cores_per_rank > 0 && other.cores_per_rank > 0 &&
      std::fabs(other.cores_per_rank / p.cores_per_rank - 1) > 0.05)
    throw Error(what + "its ranks had " + std::to_string(other.cores_per_rank) + " cores each, " +
                p.name + "'s " + std::to_string(p.cores_per_rank) +
                " (profile both on the same CPU)");
  const double b = double(p.local_batch), c = double(other.local_batch);
  p.forward_call_s.resize(p.layers.size());
  p.backward_call_s.resize(p.layers.size());
  for (size_t i = 0; i < p.layers.size(); ++i) {
    p.forward_call_s[i] = per_call(p.forward_s[i], b, other.forward_s[i], c);
    p.backward_call_s[i] = per_call(p.backward_s[i], b, other.backward_s[i], c);
  }
  p.data_call_s = per_call(p.data_s, b, other.data_s, c);
  p.loss_call_s = per_call(p.loss_s, b, other.loss_s, c);
  p.call_batch = other.local_batch;
}

StepProfile at_batch(const StepProfile& p, double local_batch) {
  StepProfile q = p;
  const double scale = local_batch / double(p.local_batch);
  const bool split = p.forward_call_s.size() == p.layers.size();
  for (size_t i = 0; i < p.layers.size(); ++i) {
    q.forward_s[i] = at(p.forward_s[i], split ? p.forward_call_s[i] : 0, scale);
    q.backward_s[i] = at(p.backward_s[i], split ? p.backward_call_s[i] : 0, scale);
  }
  q.data_s = at(p.data_s, p.data_call_s, scale);
  q.loss_s = at(p.loss_s, p.loss_call_s, scale);
  q.local_batch = std::max<int64_t>(1, std::llround(local_batch));
  return q;
}

}  // namespace hpdl
