// The parameter server's update rules, applied by a server to its own shard as each
// worker's push arrives (ParamShards::serve), in host memory with host vector operations:
//   Downpour SGD   w <- w - lr*g
//   DC-ASGD        w <- w - lr*(g + lambda*g*g*(w - w_bak)), lambda constant, or
//                  lambda0 / sqrt(MS + eps) per element with MS = m*MS + (1-m)*g^2 kept by
//                  the server per worker
//   asynchronous DiLoCo (mode "downpour", outer "nesterov"), with W workers
//                  D = lr*g (the change the worker's n_push local SGD steps made); the
//                  pushes a shard applies count in rounds of W (whoever sent them):
//                  within a round  b <- b + D, w <- w - lr_o*D/W;
//                  the round's last  m <- mu*m + (b + D)/W, b <- 0,
//                                    w <- w - lr_o*(D/W + mu*m)
//                  (delayed Nesterov, after Liu et al. 2024, arXiv:2401.09135: a round of
//                  W pushes moves w as one synchronous DiLoCo step over W ranks would,
//                  and the momentum moves once a round; applying every push with the
//                  whole step and momentum, W times a round, diverged on LeNet at 7
//                  workers). W = 1 is the plain Nesterov outer step m <- mu*m + D,
//                  w <- w - lr_o*(D + mu*m); lr_o = W with mu = 0 is Downpour
// where w_bak is exactly what this worker last pulled of the shard (the server keeps the
// copy it handed out). No worker reads, computes and writes back the shard any more.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hpdl/config/settings.hpp"
#include "hpdl/kernels/vector_ops.hpp"

namespace hpdl {

class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  // Applies worker's gradient sum g (n values of this shard) at rate lr to the shard w;
  // bak: what this worker last pulled of the shard; applied: the pushes this shard applied
  // before this one (its version, checkpointed).
  virtual void apply(int worker, const float* g, float lr, float* w, const float* bak, int64_t n,
                     int64_t applied) = 0;
  // Whether the rule reads w_bak (a checkpoint then carries every worker's).
  virtual bool uses_backup() const = 0;
  // The rule's own state for one worker that a checkpoint must carry (name, this shard's
  // values), for save and restore.
  struct State {
    std::string name;
    std::span<float> values;
  };
  virtual std::vector<State> state(int worker) = 0;
  // State of the shard itself, shared by all workers (DiLoCo's outer momentum and the
  // round's changes so far).
  virtual std::vector<State> shared_state() { return {}; }
};

// "downpour" (with outer "nesterov": asynchronous DiLoCo) or "dcasgd" (from dist.mode), for
// `workers` workers on a shard of n parameters; ops: host vector operations (built without
// contraction, so that a server's step equals a local one bit for bit).
std::unique_ptr<UpdateRule> make_update_rule(const DistributedConfig& dist, int workers, int64_t n,
                                             VectorOps& ops);

}  // namespace hpdl
