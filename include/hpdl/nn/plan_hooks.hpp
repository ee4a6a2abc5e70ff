// What a layer offers the planning of its chain (the planner, chain_planner.hpp, and the
// chain that executes the plan), apart from its life cycle (layer.hpp): whether it is a
// view, the ReLU fusions it can take, the activation layouts its kernels read and write,
// whether it can write its rows into a joined output, whether it writes its parameter
// gradients; and what it is told of the outcome. Most layers take no part and keep the
// defaults; one that does derives from PlanHooks too and hands itself to
// Layer::set_plan_hooks. Both ask through Layer::plan(), so readers of a layer's life cycle
// never see these.
#pragma once
#include <cstdint>
#include <string>

#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

class PlanHooks {
 public:
  PlanHooks() = default;
  PlanHooks(const PlanHooks&) = delete;
  PlanHooks& operator=(const PlanHooks&) = delete;
  virtual ~PlanHooks() = default;

  // True when the output is the input viewed with another shape (no copy, no work).
  virtual bool is_view() const { return false; }

  // ReLU fusion, decided by the planner before bind (plan/planner.hpp): a ReLU followed by a layer
  // that can apply it to its own output exactly (max pooling: max over a window and ReLU commute,
  // and the gradient reaches the same inputs) becomes a view of its input, and that layer applies
  // the ReLU to its output instead, a quarter of the elements after a 2x2 pool. Failing that, a
  // layer before the ReLU may take it on (a dense layer: a post-op of its product, no pass of its
  // own over the output).
  virtual bool is_relu() const { return false; }
  // Asked of the layer after a ReLU: true = it now applies the ReLU to its output.
  virtual bool absorb_relu() { return false; }
  // Asked of the layer before a ReLU the next layer did not take: true = it now applies the
  // ReLU to its own output, and its backward takes the ReLU's gradient too.
  virtual bool absorb_following_relu() { return false; }
  // Told to the ReLU whose work the layer `next` took over.
  virtual void fuse_into(const std::string& next) { (void)next; }

  // Activation layouts (kernels.hpp: channel blocks), chosen by the planner once every layer
  // is bound: the block the layer's kernels read x and dx in (write y and dy in) with no
  // conversion; 1 = plain NCHW (every layer but a convolution and a max pool), kAnyBlock =
  // whichever its neighbour wants (a max pool converts on the way).
  virtual int64_t native_in_block() const { return 1; }
  virtual int64_t native_out_block() const { return 1; }
  // Told the agreed blocks of x/dx and y/dy; called only when one of them is not 1, and only
  // with blocks the layer offered (or any, where it offered kAnyBlock). May rebuild kernels.
  virtual void use_blocks(int64_t in_block, int64_t out_block, KernelFactory& k) {
    (void)in_block, (void)out_block, (void)k;
  }
  // True for a layer that works element by element alike in any layout and hands its input's
  // layout on (an activation, fused or not); false for one that needs plain (flatten reads
  // [N, C, H, W] as [N, C H W]; dropout's masks and batch-norm's channels follow the index).
  virtual bool keeps_layout() const { return false; }

  // Asked once bound, by a concatenation of the branch chains this layer ends: whether it can
  // write its output's rows (the last axis) `stride` floats apart, straight into the joined
  // output, and read its output gradient's rows from the same places. May rebuild kernels.
  virtual bool write_rows_apart(int64_t stride, KernelFactory& k) {
    (void)stride, (void)k;
    return false;
  }

  // Told before bind by a Branches whose branches run at once, one thread each: the layer's
  // kernels then take that one thread (an LSTM's per-step sums; a Branches tells its own).
  virtual void run_on_own_thread() {}

  // Whether backward gives one batch's parameter gradients without being zeroed first (it
  // writes them, or, a layer with branches, its inner chains zero or write them), when
  // Pass::write_param_grads (after bind); if false, the chain zeroes them before its backward.
  virtual bool writes_param_grads() const { return false; }
};

}  // namespace hpdl
