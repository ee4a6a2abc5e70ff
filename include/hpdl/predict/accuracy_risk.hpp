// How much a training candidate of `hpdl predict --recommend` may cost in test accuracy
// against synchronous SGD after the same epochs: a grade and the reason, from the settings
// that the measurements in docs/results.md tie to accuracy (4 ranks, seeds 1-3, and the
// parameter server at 7 workers):
//   synchronous SGD                      none (the reference)
//   16-bit gradients, error feedback     low (within the seeds' spread on every model)
//   local SGD / DiLoCo every H steps     by f = H / the steps of an epoch, the share of an
//                                        epoch a rank trains alone between averages:
//                                        DiLoCo low up to 5 %, local SGD up to 1 %, both
//                                        medium up to 50 %, high beyond (LeNet lost 1 point
//                                        with local SGD at f = 3 %, DiLoCo none; at
//                                        f = 67 % on HAR both lost about 1 point)
//   Downpour / DC-ASGD                   by the staleness W - 1 (W workers): low up to 3,
//                                        medium up to 15, high beyond
//   asynchronous DiLoCo every H steps    by H W / the steps of an epoch (how far the
//                                        server moves while a worker trains alone): low
//                                        up to 2 %, medium up to 10 %, high beyond
// and any parameter-server candidate is high when the run trains with another optimizer
// than SGD (the server applies plain SGD at the run's optimizer.lr).
#pragma once
#include <string>

#include "hpdl/predict/step_profile.hpp"

namespace hpdl {

enum class Risk { kNone, kLow, kMedium, kHigh };

struct AccuracyRisk {
  Risk level = Risk::kNone;
  std::string why;
  std::string text() const;  // "medium: each rank takes 16 steps alone ..."
};

const char* risk_name(Risk r);

// The risk of training as `p` describes (a candidate's profile) on `ranks` ranks.
AccuracyRisk accuracy_risk(const StepProfile& p, int ranks);

}  // namespace hpdl
