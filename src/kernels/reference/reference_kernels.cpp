// Reference kernels: the plainest correct loops, in double accumulation, used by tests
// as ground truth for the oneDNN (and later CUDA) kernels. Not tuned; never the default.
// N batch, I/O dense inputs/outputs, C/O conv in/out channels, H/W height/width, K kernel.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../cpu/denormals.hpp"
#include "../cpu/loop_kernels.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/kernels/kernels.hpp"

namespace hpdl {
namespace {

class RefDense final : public DenseKernel {
 public:
  explicit RefDense(const DenseDims& d) : d_(d) {}
  void forward(const float* x, const float* w, const float* b, float* y) override {
    for (int64_t n = 0; n < d_.batch; ++n)
      for (int64_t o = 0; o < d_.out; ++o) {
        double s = b[o];
        for (int64_t i = 0; i < d_.in; ++i) s += double(x[n * d_.in + i]) * w[o * d_.in + i];
        y[n * d_.out + o] = static_cast<float>(s);
      }
  }
  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                float* db) override {
    if (dx)
      for (int64_t n = 0; n < d_.batch; ++n)
        for (int64_t i = 0; i < d_.in; ++i) {
          double s = 0;
          for (int64_t o = 0; o < d_.out; ++o) s += double(dy[n * d_.out + o]) * w[o * d_.in + i];
          dx[n * d_.in + i] = static_cast<float>(s);
        }
    for (int64_t o = 0; o < d_.out; ++o) {
      double sb = 0;
      for (int64_t n = 0; n < d_.batch; ++n) sb += dy[n * d_.out + o];
      if (db) db[o] += static_cast<float>(sb);
      if (!dw) continue;
      for (int64_t i = 0; i < d_.in; ++i) {
        double s = 0;
        for (int64_t n = 0; n < d_.batch; ++n) s += double(dy[n * d_.out + o]) * x[n * d_.in + i];
        dw[o * d_.in + i] += static_cast<float>(s);
      }
    }
  }

 private:
  DenseDims d_;
};

class RefConv final : public ConvKernel {
 public:
  explicit RefConv(const ConvDims& d)
      : d_(d),
        gx_(d.batch * d.in_c * d.in_h * d.in_w),
        gw_(d.out_c * d.in_c * d.kernel * d.kernel) {}

  void forward(const float* x, const float* w, const float* b, float* y) override {
    const int64_t OH = d_.out_h(), OW = d_.out_w();
    for (int64_t n = 0; n < d_.batch; ++n)
      for (int64_t o = 0; o < d_.out_c; ++o)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            double s = b[o];
            visit(oh, ow, [&](int64_t c, int64_t kh, int64_t kw, int64_t ih, int64_t iw) {
              s += double(x[xi(n, c, ih, iw)]) * w[wi(o, c, kh, kw)];
            });
            y[((n * d_.out_c + o) * OH + oh) * OW + ow] = static_cast<float>(s);
          }
  }

  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                float* db) override {
    const int64_t OH = d_.out_h(), OW = d_.out_w();
    std::fill(gx_.begin(), gx_.end(), 0.0);
    std::fill(gw_.begin(), gw_.end(), 0.0);
    for (int64_t n = 0; n < d_.batch; ++n)
      for (int64_t o = 0; o < d_.out_c; ++o)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const double g = dy[((n * d_.out_c + o) * OH + oh) * OW + ow];
            db[o] += static_cast<float>(g);
            visit(oh, ow, [&](int64_t c, int64_t kh, int64_t kw, int64_t ih, int64_t iw) {
              gw_[wi(o, c, kh, kw)] += g * x[xi(n, c, ih, iw)];
              gx_[xi(n, c, ih, iw)] += g * w[wi(o, c, kh, kw)];
            });
          }
    for (size_t i = 0; i < gw_.size(); ++i) dw[i] += static_cast<float>(gw_[i]);
    if (dx)
      for (size_t i = 0; i < gx_.size(); ++i) dx[i] = static_cast<float>(gx_[i]);
  }

 private:
  int64_t xi(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return ((n * d_.in_c + c) * d_.in_h + h) * d_.in_w + w;
  }
  int64_t wi(int64_t o, int64_t c, int64_t kh, int64_t kw) const {
    return ((o * d_.in_c + c) * d_.kernel + kh) * d_.kernel + kw;
  }
  // Calls f(c, kh, kw, ih, iw) for every input tap of output pixel (oh, ow) inside the image.
  template <typename F>
  void visit(int64_t oh, int64_t ow, F&& f) const {
    for (int64_t c = 0; c < d_.in_c; ++c)
      for (int64_t kh = 0; kh < d_.kernel; ++kh)
        for (int64_t kw = 0; kw < d_.kernel; ++kw) {
          const int64_t ih = oh * d_.stride - d_.pad + kh, iw = ow * d_.stride - d_.pad + kw;
          if (ih >= 0 && ih < d_.in_h && iw >= 0 && iw < d_.in_w) f(c, kh, kw, ih, iw);
        }
  }
  ConvDims d_;
  std::vector<double> gx_, gw_;  // double accumulators, sized once
};

class RefMaxPool final : public MaxPoolKernel {
 public:
  explicit RefMaxPool(const PoolDims& d)
      : d_(d), argmax_(d.batch * d.channels * d.out_h() * d.out_w()) {}

  void forward(const float* x, float* y) override {
    const int64_t OH = d_.out_h(), OW = d_.out_w();
    for (int64_t nc = 0; nc < d_.batch * d_.channels; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t arg = 0;
          for (int64_t kh = 0; kh < d_.kernel; ++kh)
            for (int64_t kw = 0; kw < d_.kernel; ++kw) {
              const int64_t i =
                  (nc * d_.in_h + oh * d_.stride + kh) * d_.in_w + ow * d_.stride + kw;
              if (x[i] > best) best = x[i], arg = i;
            }
          const int64_t o = (nc * OH + oh) * OW + ow;
          if (d_.relu && !(best > 0)) best = 0, arg = -1;  // no gradient reaches the window
          y[o] = best;
          argmax_[o] = arg;
        }
  }
  void backward(const float* dy, float* dx) override {
    for (int64_t i = 0; i < d_.batch * d_.channels * d_.in_h * d_.in_w; ++i) dx[i] = 0;
    for (size_t o = 0; o < argmax_.size(); ++o)
      if (argmax_[o] >= 0) dx[argmax_[o]] += dy[o];
  }
  Takes takes() const override { return {d_.relu, false}; }

 private:
  PoolDims d_;
  std::vector<int64_t> argmax_;
};

class RefActivation final : public ActivationKernel {
 public:
  RefActivation(Activation a, int64_t n) : a_(a), n_(n) {}
  void forward(const float* x, float* y) override {
    for (int64_t i = 0; i < n_; ++i) {
      switch (a_) {
        case Activation::kRelu:
          y[i] = x[i] > 0 ? x[i] : 0;
          break;
        case Activation::kTanh:
          y[i] = std::tanh(x[i]);
          break;
        case Activation::kSigmoid:
          y[i] = 1.0f / (1.0f + std::exp(-x[i]));
          break;
      }
    }
  }
  void backward(const float* x, const float* y, const float* dy, float* dx) override {
    for (int64_t i = 0; i < n_; ++i) {
      switch (a_) {
        case Activation::kRelu:
          dx[i] = x[i] > 0 ? dy[i] : 0;
          break;
        case Activation::kTanh:
          dx[i] = dy[i] * (1 - y[i] * y[i]);
          break;
        case Activation::kSigmoid:
          dx[i] = dy[i] * y[i] * (1 - y[i]);
          break;
      }
    }
  }

 private:
  Activation a_;
  int64_t n_;
};

class ReferenceKernels final : public LoopKernels {
 public:
  ReferenceKernels() : LoopKernels(false) {}
  std::string name() const override { return "reference"; }
  std::unique_ptr<DenseKernel> dense(const DenseDims& d) override {
    return std::make_unique<RefDense>(d);
  }
  std::unique_ptr<ConvKernel> conv(const ConvDims& d) override {
    return std::make_unique<RefConv>(d);
  }
  std::unique_ptr<MaxPoolKernel> max_pool(const PoolDims& d) override {
    HPDL_REQUIRE(d.in_block == 1 && d.out_block == 1,
                 "max pool: this backend takes plain NCHW only");
    return std::make_unique<RefMaxPool>(d);
  }
  std::unique_ptr<ActivationKernel> activation(Activation a, int64_t n) override {
    return std::make_unique<RefActivation>(a, n);
  }
};

}  // namespace

std::unique_ptr<KernelFactory> make_reference_kernels() {
  flush_denormals();
  return std::make_unique<ReferenceKernels>();
}

}  // namespace hpdl
