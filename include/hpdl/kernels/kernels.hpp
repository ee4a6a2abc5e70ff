// The narrow math interface under the layers: one abstract kernel per operation, built
// once for fixed dimensions, then executed per step on raw pointers into model buffers.
// Implementations: reference (plain loops, the ground truth for tests) and oneDNN (CPU).
// Layouts are plain row-major: activations N,C,H,W; dense weights O,I; conv weights O,I,KH,KW.
// Every backward overwrites the input gradient dx (skipped when dx is null) and ADDS into
// the parameter gradients dw, db. Kernels never allocate in forward/backward.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace hpdl {

// N batch, I inputs, O outputs.
struct DenseDims {
  int64_t batch, in, out;
};

// Output positions of a K-wide window with stride S over IN inputs padded by P on both
// sides; 0 when the window does not fit (or K, S < 1, P < 0). Never truncating division
// of a negative span: (8 - 16) / 16 + 1 would claim one position and read outside.
constexpr int64_t window_outputs(int64_t in, int64_t kernel, int64_t stride, int64_t pad) {
  if (kernel < 1 || stride < 1 || pad < 0 || in < 1 || in + 2 * pad < kernel) return 0;
  return (in + 2 * pad - kernel) / stride + 1;
}

// N batch, C/H/W input channels/height/width, O output channels, K square kernel.
struct ConvDims {
  int64_t batch, in_c, in_h, in_w, out_c, kernel, stride, pad;
  int64_t out_h() const { return window_outputs(in_h, kernel, stride, pad); }
  int64_t out_w() const { return window_outputs(in_w, kernel, stride, pad); }
};

// Max pooling over K x K windows with stride S, no padding.
struct PoolDims {
  int64_t batch, channels, in_h, in_w, kernel, stride;
  int64_t out_h() const { return window_outputs(in_h, kernel, stride, 0); }
  int64_t out_w() const { return window_outputs(in_w, kernel, stride, 0); }
};

enum class Activation { kRelu, kTanh, kSigmoid };

class DenseKernel {
 public:
  virtual ~DenseKernel() = default;
  // y[N,O] = x[N,I] * w[O,I]^T + b[O]
  virtual void forward(const float* x, const float* w, const float* b, float* y) = 0;
  // dx[N,I] = dy * w (overwrite); dw[O,I] += dy^T * x; db[O] += sum_n dy. Any of dx, dw,
  // db may be null: that part is skipped (the LSTM takes its weight gradient in one
  // product over all steps, and needs only dx per step).
  virtual void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                        float* db) = 0;
};

class ConvKernel {
 public:
  virtual ~ConvKernel() = default;
  // y[N,O,OH,OW] = conv(x[N,C,H,W], w[O,C,K,K]) + b[O]
  virtual void forward(const float* x, const float* w, const float* b, float* y) = 0;
  virtual void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                        float* db) = 0;
};

class MaxPoolKernel {
 public:
  virtual ~MaxPoolKernel() = default;
  // y[N,C,OH,OW]; remembers the argmax of the last forward for backward.
  virtual void forward(const float* x, float* y) = 0;
  virtual void backward(const float* dy, float* dx) = 0;
};

class ActivationKernel {
 public:
  virtual ~ActivationKernel() = default;
  virtual void forward(const float* x, float* y) = 0;
  // dx from dy and the forward's input x and output y.
  virtual void backward(const float* x, const float* y, const float* dy, float* dx) = 0;
};

// Builds kernels of one backend. Created once per model; owns backend state (engine, stream).
class KernelFactory {
 public:
  virtual ~KernelFactory() = default;
  virtual std::string name() const = 0;
  virtual std::unique_ptr<DenseKernel> dense(const DenseDims& d) = 0;
  virtual std::unique_ptr<ConvKernel> conv(const ConvDims& d) = 0;
  virtual std::unique_ptr<MaxPoolKernel> max_pool(const PoolDims& d) = 0;
  virtual std::unique_ptr<ActivationKernel> activation(Activation a, int64_t n) = 0;
};

// "reference" or "onednn"; throws Error for an unknown or unavailable backend.
std::unique_ptr<KernelFactory> make_kernel_factory(const std::string& backend);
std::unique_ptr<KernelFactory> make_reference_kernels();
std::unique_ptr<KernelFactory> make_onednn_kernels();

}  // namespace hpdl
