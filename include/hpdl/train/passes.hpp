// The passes both trainers share: a training pass that leaves fresh gradients in
// model.grads(), and the evaluation of the current parameters on a split.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/nn/loss.hpp"
#include "hpdl/nn/model.hpp"
#include "hpdl/profile/profiler.hpp"
#include "hpdl/train/epoch_stats.hpp"
#include "hpdl/train/metrics.hpp"

namespace hpdl {

// The splits of a run; validation and test may be null.
struct Splits {
  H5Split* train = nullptr;
  H5Split* validation = nullptr;
  H5Split* test = nullptr;
};

// The profiler's names for the parts of a step outside the layers, registered once.
struct StepNames {
  int32_t data = 0, loss = 0, update = 0, comm_wait = 0, pull = 0, push = 0;
  explicit StepNames(Profiler* p);
};

// Forward and the loss on the batch already in model.input() / labels, then zeroes the
// gradients and backpropagates the loss scaled by loss_scale (on_layer_done as in
// Model::backward). Returns the loss sum. With a profiler the loss is timed as names.loss.
double forward_backward(Model& model, SoftmaxCrossEntropy& loss, const int32_t* labels,
                        const Pass& pass, float loss_scale,
                        const std::function<void(size_t)>& on_layer_done = {},
                        Profiler* prof = nullptr, const StepNames* names = nullptr);

// Reads rows of split into model.input() / labels (timed as names.data), then
// forward_backward.
double compute_gradients(Model& model, SoftmaxCrossEntropy& loss, H5Split& split,
                         std::span<const int64_t> rows, int32_t* labels, const Pass& pass,
                         float loss_scale, const std::function<void(size_t)>& on_layer_done = {},
                         Profiler* prof = nullptr, const StepNames* names = nullptr,
                         std::span<const int64_t> next_rows = {});

class Evaluator {
 public:
  Evaluator(const Comm& comm, Model& model, int64_t classes, Watchdog& watchdog);
  // Collective: each rank scores its block of the split's rows with the current
  // parameters; confusion() then holds the sum over ranks. Returns the mean loss.
  double run(H5Split& split, int64_t step);
  const ConfusionMatrix& confusion() const { return confusion_; }

 private:
  const Comm& comm_;
  Model& model_;
  Watchdog& watchdog_;
  SoftmaxCrossEntropy loss_;
  std::vector<int32_t> labels_;
  ConfusionMatrix confusion_;
};

// Collective: the evaluation after an epoch: the validation split when there is one (the
// test split is then kept for the final model), else the test split; fills st's columns.
void evaluate_epoch(Evaluator& evaluator, const Splits& splits, int64_t step, EpochStats& st);

}  // namespace hpdl
