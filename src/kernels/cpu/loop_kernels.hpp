// Kernels that are loops on every CPU backend (oneDNN has no primitive that fits: the loss
// keeps its log-sum-exp in double and skips padding rows; dropout draws counter-based
// masks; the LSTM cell is fused with fast approximations of sigmoid and tanh; ScalarNorm
// normalises whole samples with one scalar scale). `parallel` picks OpenMP threads (the CPU
// backend) or plain loops (the reference backend); the arithmetic is element_math.hpp's either way.
// tanh and sigmoid are loops on the oneDNN backend only (smooth_activation: oneDNN's AVX2
// eltwise was 4x slower than this loop); the reference backend keeps the library's functions.
// Private to kernels/.
#pragma once
#include <memory>

#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

// The part of a CPU backend's factory that is loops: both CPU backends derive from it, the
// reference one with plain loops and vector operations, the oneDNN one with OpenMP.
class LoopKernels : public KernelFactory {
 public:
  explicit LoopKernels(bool parallel);
  std::unique_ptr<SoftmaxXentKernel> softmax_xent(int64_t batch, int64_t classes) override;
  std::unique_ptr<DropoutKernel> dropout(const DropoutDims& d) override;
  std::unique_ptr<LstmCellKernel> lstm_cell(const LstmCellDims& d) override;
  std::unique_ptr<ScalarNormKernel> scalar_norm(const ScalarNormDims& d) override;
  // Loops here; the oneDNN backend overrides it with oneDNN's primitive.
  std::unique_ptr<BatchNormKernel> batch_norm(const BatchNormDims& d) override;
  VectorOps& ops() override { return *ops_; }
  Device& device() override { return host_device(); }  // host memory, the host clock

 protected:
  // tanh or sigmoid with the fast exp of the LSTM cell (the oneDNN backend's; the reference
  // backend keeps the library's tanh and exp).
  std::unique_ptr<ActivationKernel> smooth_activation(Activation a, int64_t n);

 private:
  bool parallel_;
  std::unique_ptr<VectorOps> ops_;
};

}  // namespace hpdl
