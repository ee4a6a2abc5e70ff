// NaN/Inf guard (see the header). The check itself is the sum of squares the trainer
// computes anyway for clipping; everything here beyond one comparison runs only on a
// failing step.
#include "hpdl/train/finite_guard.hpp"

#include <cmath>

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {
constexpr const char* kHint =
    " (lower optimizer.lr, set optimizer.clip_norm, or set train.nonfinite = \"skip\")";
}  // namespace

int64_t first_nonfinite_segment(const std::vector<ParamSegment>& segments,
                                std::span<const float> values) {
  for (size_t s = 0; s < segments.size(); ++s) {
    const float* v = values.data() + segments[s].offset;
    for (int64_t i = 0; i < segments[s].size; ++i)
      if (!std::isfinite(v[i])) return static_cast<int64_t>(s);
  }
  return -1;
}

FiniteGuard::FiniteGuard(bool skip, const Comm& comm, Watchdog& watchdog)
    : skip_(skip), comm_(comm), watchdog_(watchdog) {}

std::string FiniteGuard::describe(const Model& model, int64_t step, int64_t epoch) const {
  std::vector<float> grads(static_cast<size_t>(model.num_params()));  // a failing step only
  model.grads_to_host(grads);
  const int64_t s = first_nonfinite_segment(model.segments(), grads);
  return "step " + std::to_string(step) + " (epoch " + std::to_string(epoch) +
         "): the gradient is not finite (NaN or Inf)" +
         (s >= 0 ? ", first in layer parameter '" + model.segments()[s].name + "'" : "");
}

bool FiniteGuard::check_reduced(double grad_sq, double local_loss, const Model& model, int64_t step,
                                int64_t epoch) {
  if (std::isfinite(grad_sq)) return true;
  std::string what = describe(model, step, epoch);
  std::vector<std::string> finite;
  {
    WatchdogScope guard(watchdog_, "non-finite loss gather", step);
    finite = comm_.allgather(std::isfinite(local_loss) ? "1" : "0");
  }
  std::string ranks;
  for (size_t r = 0; r < finite.size(); ++r)
    if (finite[r] == "0") ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  what +=
      ranks.empty() ? "; every rank's loss was finite" : "; loss not finite on rank(s) " + ranks;
  if (!skip_) {
    throw AgreedError("training diverged at " + what + kHint);
  }
  ++skipped_;
  warning_ =
      what + ": step skipped (train.nonfinite = \"skip\"), " + std::to_string(skipped_) + " so far";
  return false;
}

bool FiniteGuard::check_local(double grad_sq, const Model& model, int64_t step, int64_t epoch) {
  if (std::isfinite(grad_sq)) return true;
  const std::string what = "worker " + describe(model, step, epoch);
  if (!skip_) {
    throw Error("training diverged at " + what + kHint);
  }
  ++skipped_;
  warning_ = what + ": step skipped";
  return false;
}

}  // namespace hpdl
