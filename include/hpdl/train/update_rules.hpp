// The parameter server's update rules, applied by a server to its own shard as each
// worker's push arrives (ParamShards::serve), in host memory with host vector operations:
//   Downpour SGD   w <- w - lr*g
//   DC-ASGD        w <- w - lr*(g + lambda*g*g*(w - w_bak)), lambda constant, or
//                  lambda0 / sqrt(MS + eps) per element with MS = m*MS + (1-m)*g^2 kept by
//                  the server per worker
//   asynchronous DiLoCo (mode "downpour", outer "nesterov")
//                  D = lr*g (the change the worker's n_push local SGD steps made),
//                  m <- mu*m + D, w <- w - lr_o*(D + mu*m), one m per shard that every
//                  worker's push moves in arrival order (the delayed-momentum form: a push
//                  computed from an older w still enters today's momentum); lr_o = 1 and
//                  mu = 0 is Downpour
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
  // bak: what this worker last pulled of the shard.
  virtual void apply(int worker, const float* g, float lr, float* w, const float* bak,
                     int64_t n) = 0;
  // Whether the rule reads w_bak (a checkpoint then carries every worker's).
  virtual bool uses_backup() const = 0;
  // The rule's own state for one worker that a checkpoint must carry (name, this shard's
  // values), for save and restore.
  struct State {
    std::string name;
    std::span<float> values;
  };
  virtual std::vector<State> state(int worker) = 0;
  // State of the shard itself, shared by all workers (DiLoCo's outer momentum).
  virtual std::vector<State> shared_state() { return {}; }
};

// "downpour" (with outer "nesterov": asynchronous DiLoCo) or "dcasgd" (from dist.mode), for
// `workers` workers on a shard of n parameters; ops: host vector operations (built without
// contraction, so that a server's step equals a local one bit for bit).
std::unique_ptr<UpdateRule> make_update_rule(const DistributedConfig& dist, int workers, int64_t n,
                                             VectorOps& ops);

}  // namespace hpdl
