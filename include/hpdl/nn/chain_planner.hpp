// What decides the choices of a chain that involve several of its layers: which ReLUs fold
// into a neighbour (before bind, so that a folded ReLU allocates nothing) and which channel
// block every activation is kept in (after bind, once each kernel knows the blocks it reads
// and writes natively). The execution planner (plan/planner.hpp) is the implementation; it
// reads what the layers offer (PlanHooks) and tells them the outcome. The chain only
// executes it: a chain set up without a planner runs every layer as written, all plain.
#pragma once
#include <cstdint>
#include <vector>

namespace hpdl {

class Chain;

class ChainPlanner {
 public:
  virtual ~ChainPlanner() = default;
  // Called by Chain::setup once the shapes are known: folds ReLUs into their neighbours
  // (PlanHooks::absorb_relu, absorb_following_relu, fuse_into), in this chain and in the
  // chains inside its layers (which it hands itself to: Chain::set_planner).
  virtual void fuse(Chain& chain) const = 0;
  // Called by Chain::bind once every layer is bound: the channel block of each activation,
  // 0 (the input) to size() (the output), both ends 1 (plain).
  virtual std::vector<int64_t> layouts(const Chain& chain) const = 0;
};

}  // namespace hpdl
