// Element-wise, reduction and update operations on flat float buffers in the backend's
// memory: the optimizers' arithmetic, the gradient transforms before an update and the
// parameter server's update rules. They
// run in call order; a backend with a stream (CUDA) enqueues them, and a value returned to
// the host (sum_squares) is the one point that waits.
//
// Every backend implements every operation: the interface is pure virtual, so a backend
// that misses one fails to compile with an error naming it ("because the following virtual
// functions are pure within 'CpuVectorOps': ... VectorOps::adam"), never a silent stub.
// Element-wise results are the same bit for bit on every CPU backend (the files are built
// without fused multiply-add); sum_squares may differ in its last bits (summation order).
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "hpdl/core/range.hpp"

namespace hpdl {

// One Adam step's constants: w -= step * m / (sqrt(v) * inv_sqrt_c2 + eps), with the bias
// corrections c1 = 1 - beta1^t folded into step = lr / c1 and c2 = 1 - beta2^t into
// inv_sqrt_c2 = 1 / sqrt(c2).
struct AdamStep {
  float beta1, beta2, eps, step, inv_sqrt_c2;
};

// DC-ASGD's delay-compensated step on a shard w of parameters, whose backup at the
// worker's pull is bak and whose gradient is g: w -= lr * (g + lambda * g * g * (w - bak)),
// with lambda = lambda0 / sqrt(ms + eps) per element when adaptive.
struct DcAsgdStep {
  float lr, lambda, lambda0, eps;
  bool adaptive;
};

class VectorOps {
 public:
  virtual ~VectorOps() = default;
  // y[i] += a * x[i]
  virtual void axpy(int64_t n, float a, const float* x, float* y) = 0;
  // y[i] = a * x[i]
  virtual void scaled_copy(int64_t n, float a, const float* x, float* y) = 0;
  // x[i] *= a
  virtual void scale(int64_t n, float a, float* x) = 0;
  // x[i] = value
  virtual void fill(int64_t n, float value, float* x) = 0;
  // dst[r * ld_dst + j] = src[r * ld_src + j] for r < rows, j < width (a 2-D copy:
  // columns of a concatenation, one step of a sequence).
  virtual void copy_rows(int64_t rows, int64_t width, const float* src, int64_t ld_src, float* dst,
                         int64_t ld_dst) = 0;
  // The sum of x[i]^2, accumulated in double: finite exactly when every x[i] is finite (no
  // float's square overflows a double), so one pass serves a norm and a NaN/Inf check.
  virtual double sum_squares(int64_t n, const float* x) = 0;
  // y[i] += a * x[i] for i in the ranges (ascending, disjoint, within n), then the sum of
  // y[i]^2 over i < n as sum_squares gives it: L2 decay on the weights and the guard's norm
  // of the whole gradient in one pass over it.
  virtual double axpy_sum_squares(std::span<const Range> ranges, float a, const float* x, int64_t n,
                                  float* y) = 0;
  // SGD: v[i] = mu * v[i] + g[i]; w[i] -= lr * v[i]. With mu == 0 (v may be null):
  // w[i] -= lr * g[i].
  virtual void sgd(int64_t n, float lr, float mu, const float* g, float* v, float* w) = 0;
  // Adam: m[i] = b1 m[i] + (1 - b1) g[i]; v[i] = b2 v[i] + (1 - b2) g[i]^2; then w as above.
  virtual void adam(int64_t n, const AdamStep& s, const float* g, float* m, float* v, float* w) = 0;
  // An exponential mean of squares: ms[i] = decay * ms[i] + (1 - decay) * g[i]^2.
  virtual void mean_square(int64_t n, float decay, const float* g, float* ms) = 0;
  // DC-ASGD (see DcAsgdStep); ms is read only when adaptive.
  virtual void dcasgd(int64_t n, const DcAsgdStep& s, const float* g, const float* bak,
                      const float* ms, float* w) = 0;
};

// The two CPU backends' operations (the factories own one each).
std::unique_ptr<VectorOps> make_reference_vector_ops();
std::unique_ptr<VectorOps> make_cpu_vector_ops();

}  // namespace hpdl
