// The execution planner: the choices of a model that involve several layers, made once at
// set-up by static rules (shapes, kernels, machine; never a timing), so every run of a
// config executes the same plan (execution_plan.hpp records it).
// - ReLU fusion, before bind: a ReLU followed by a layer that can apply it to its own output
//   exactly (a max pool: max and ReLU commute, and the gradient reaches the same inputs)
//   becomes a view of its input and that layer applies it, on a quarter of the elements
//   after a 2x2 pool; failing that, the layer before it may take it on (a dense layer: a
//   post-op of its product). Never the chain's last layer.
// - Activation layouts, after bind: an activation that a layer writes in a native channel
//   block and the next layer (past layers that keep layouts: activations) reads in the same
//   block, or that one side takes in any block the other wants, stays in that block, with no
//   conversion to plain and back between them. The chain's input and output stay plain.
#pragma once
#include "hpdl/nn/chain_planner.hpp"

namespace hpdl {

// The planner every model built from a config uses (builder.cpp); stateless.
const ChainPlanner& execution_planner();

}  // namespace hpdl
