// A model's execution plan: for every layer, in order, what its kernels run (the kernel, the
// layouts it keeps, the ReLU it took over) and the run-wide choices (backend, GEMM library,
// precision, run.kernels overrides, one thread), as they were decided when the model was set
// up. The choices are static (shape, CPU, config; never a timing), so two runs with the same
// plan compute the same sums: `hpdl time` and `hpdl check` print it, manifest.json records
// it, and a checkpoint keeps it, so that a run resumed where the plan would differ (another
// CPU, another run.kernels) is refused with the first operation that differs.
//
// The plan is read from the layers once they are bound (Layer::kernel_choice): each kernel
// chose through an ordered candidate table (kernels/candidates.hpp, kernels/onednn/
// choices.cpp), whose reasons the plan prints; the fusions and layouts that involve several
// layers were chosen by the planner (planner.hpp) and show in those kernels' words (a ReLU
// "fused into pool1", a pool that "reads nhwc, writes nchw"). Every backend, the CUDA one
// included, executes its model through the same planner.
// Where a training step reads back to the host (what capturing it whole as one CUDA graph
// must keep outside the graph): the loss value the loss kernel returns, the finite check's
// sum of squares (train/finite_guard.cpp), the gradient buckets' host mirrors before each MPI
// call (dist/grad_reducer.cpp) and a parameter server's pulls and pushes; no layer does.
#pragma once
#include <string>
#include <vector>

#include "hpdl/config/settings.hpp"
#include "hpdl/nn/model.hpp"

namespace hpdl {

struct PlannedOperation {
  std::string layer, kind;
  std::string kernel;  // what the layer's kernels chose; "" where the backend has one way
  std::string reason;  // why (the candidate tables' reasons); not compared: it changes no sum
  // Where its output lives: "view" (its input seen another way: no storage, no work; a
  // flatten, a fused ReLU), "plain", or the channel block it is kept in ("nhwc", "nChw16c").
  // Not compared: a kept layout computes what plain does bit for bit (and the kernels that
  // keep it say so in their words).
  std::string output;
  // Its parameter gradients in a training step: "written" (no zeroing before its backward),
  // "added" (zeroed, then added to), "" (it has none). Not compared: the sums are the same.
  std::string gradients;
  bool operator==(const PlannedOperation&) const = default;
};

struct ExecutionPlan {
  // How the plan words its kernels. Plans of another format (a checkpoint written by an
  // hpdl that described the same kernels in other words; 1: before the candidate tables)
  // are not compared.
  static constexpr int kFormat = 2;
  int format = kFormat;
  std::string backend, gemm, precision;
  std::string overrides;  // run.kernels keys away from "auto" ("" none)
  bool one_thread = false;
  std::vector<PlannedOperation> operations;

  // "" when both plans compute the same sums (or are of different formats), else the first
  // difference in words, this plan as "it" and `other` as "this run": "conv1: it has nhwc
  // (...), this run blocked (...)".
  std::string first_difference(const ExecutionPlan& other) const;
  // One line a setting or operation, as `hpdl time` prints it.
  std::string table() const;
  // The plan as JSON text (a checkpoint's "plan"), and back: Error for text that is not one.
  std::string serialise() const;
  static ExecutionPlan parse(const std::string& text);
};

ExecutionPlan plan_of(const Model& model, const RunConfig& run);

}  // namespace hpdl
