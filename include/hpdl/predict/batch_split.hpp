// A rank's share of the batch costed from two profiles: a layer's time at a smaller batch
// is not its share of the time, since kernels have a cost per call (measured for the MLP:
// docs/results.md, "A rank's share of the batch, measured"). A second profile of the same
// model at another batch, on the same CPU, splits each batch-proportional part into a cost
// per call and a cost per sample.
#pragma once
#include <string>

#include "hpdl/predict/step_profile.hpp"

namespace hpdl {

// Sets p's per-call parts from `other` (read from `other_dir`), a profile of the same model
// at another local batch. Error naming other_dir and what differs: the layers, the batch
// (the same), the cores each rank had.
void split_per_call(StepProfile& p, const StepProfile& other, const std::string& other_dir);

// p with its batch-proportional parts (forward, backward, data, loss) at `local_batch`
// samples: the per-call part as measured, the rest in proportion; local_batch rounded.
StepProfile at_batch(const StepProfile& p, double local_batch);

}  // namespace hpdl
