// Optimizers over the flat parameter/gradient buffers: each update is one backend vector
// operation over the whole vector (VectorOps), with its state in flat buffers of the same
// length. The gradient transforms that precede an update (L2 on weights, clipping by global
// norm) are free functions so the trainer's step reads in order.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hpdl/config/settings.hpp"
#include "hpdl/core/buffer.hpp"
#include "hpdl/core/range.hpp"
#include "hpdl/kernels/vector_ops.hpp"

namespace hpdl {

// grads += l2 * params on every decayed range (weights; not biases), and the sum of squares
// of the whole gradient after it (as sum_of_squares), in one pass over the gradient.
double add_l2_sum_squares(VectorOps& ops, const std::vector<Range>& decayed,
                          std::span<const float> params, std::span<float> grads, float l2);

// Sum of squares of x, accumulated in double: finite exactly when every element is finite
// (no float's square overflows a double), so one pass serves the norm and the NaN check.
double sum_of_squares(VectorOps& ops, std::span<const float> x);

// Scales grads down to max_norm when their L2 norm `norm` exceeds it (max_norm <= 0: off).
void clip_to_norm(VectorOps& ops, std::span<float> grads, double norm, double max_norm);

// If the L2 norm of grads exceeds max_norm, scales grads down to it. Returns the norm
// before clipping (0 without computing it when max_norm <= 0, i.e. clipping is off). All ranks hold
// the same reduced grads, so all scale alike.
double clip_by_global_norm(VectorOps& ops, std::span<float> grads, double max_norm);

// An optimizer's state as checkpoints see it: named buffers of the parameters' length in
// device memory (read and written through `device`'s host copies) and a step count on the
// host, all writable so a checkpoint can restore them in place.
struct OptimizerState {
  Device* device = nullptr;
  std::vector<std::pair<std::string, std::span<float>>> buffers;
  int64_t* steps = nullptr;  // null if the optimizer keeps no count
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // params -= step(grads); state advances by one step.
  virtual void update(std::span<float> params, std::span<const float> grads) = 0;
  virtual OptimizerState state() = 0;
  // The learning rate of the following updates (a schedule sets it before each).
  void set_lr(float lr) { lr_ = lr; }
  float lr() const { return lr_; }

 protected:
  explicit Optimizer(float lr) : lr_(lr) {}
  float lr_;
};

// SGD with (optional) heavy-ball momentum: v = mu*v + g; w -= lr*v.
class Sgd final : public Optimizer {
 public:
  // State on `device`, the one ops works on.
  Sgd(VectorOps& ops, Device& device, int64_t n, float lr, float momentum);
  void update(std::span<float> params, std::span<const float> grads) override;
  OptimizerState state() override;

 private:
  VectorOps& ops_;
  float momentum_;
  Buffer velocity_;
};

// Adam (Kingma & Ba) with bias correction.
class Adam final : public Optimizer {
 public:
  Adam(VectorOps& ops, Device& device, int64_t n, float lr, float beta1, float beta2, float eps);
  void update(std::span<float> params, std::span<const float> grads) override;
  OptimizerState state() override;

 private:
  VectorOps& ops_;
  float beta1_, beta2_, eps_;
  int64_t t_ = 0;
  Buffer m_, v_;
};

// ops and device: the backend's (KernelFactory::ops(), device()); the state lives on device.
std::unique_ptr<Optimizer> make_optimizer(VectorOps& ops, Device& device,
                                          const OptimizerConfig& cfg, int64_t num_params);

}  // namespace hpdl
