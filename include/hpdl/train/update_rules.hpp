// The parameter server's update rules, as a worker applies them to the servers' shards
// (the servers only hold memory). A rule sees the worker's pending gradient sum and its
// last pull in host memory (the worker stages both there) and uses host vector operations:
//   Downpour SGD   w <- w - lr*g                              (MPI_Accumulate, shared lock)
//   DC-ASGD        w <- w - lr*(g + lambda*g*g*(w - w_bak))   (read-modify-write under an
//                  exclusive lock), lambda constant or lambda0 / sqrt(MS + eps) per element
//                  with MS = m*MS + (1-m)*g^2 kept by the worker
// where w_bak is exactly the copy this worker last pulled.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hpdl/config/settings.hpp"
#include "hpdl/core/buffer.hpp"
#include "hpdl/dist/param_shards.hpp"
#include "hpdl/kernels/vector_ops.hpp"

namespace hpdl {

class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  // After each pull: the parameters just pulled (n values, host memory).
  virtual void pulled(std::span<const float> params) = 0;
  // Applies the pending gradient sum g (n values, host memory) at rate lr to every shard;
  // prev[s] = shard s's version before this push.
  virtual void push(ParamShards& shards, std::span<const float> g, float lr,
                    std::span<int64_t> prev, RmaStats& st) = 0;
  // The rule's own state that a checkpoint must carry (name, n values), for save/restore.
  struct State {
    std::string name;
    std::span<float> values;
  };
  virtual std::vector<State> state() = 0;
};

// "downpour" or "dcasgd" (from dist.mode); n parameters; ops: host vector operations.
std::unique_ptr<UpdateRule> make_update_rule(const DistributedConfig& dist, int64_t n,
                                             VectorOps& ops);

}  // namespace hpdl
