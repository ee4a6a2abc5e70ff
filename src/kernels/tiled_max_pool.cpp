// Non-overlapping max pooling on NCHW planes. Forward keeps the plane-local index of each
// window's maximum; backward clears one plane (cache-resident) and scatters into it.
// P planes (N*C), H/W input, OH/OW output, K window = stride.
#include "tiled_max_pool.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace hpdl {
namespace {

class TiledMaxPool final : public MaxPoolKernel {
 public:
  explicit TiledMaxPool(const PoolDims& d)
      : planes_(d.batch * d.channels),
        h_(d.in_h),
        w_(d.in_w),
        oh_(d.out_h()),
        ow_(d.out_w()),
        k_(d.kernel),
        argmax_(planes_ * oh_ * ow_) {}

  void forward(const float* x, float* y) override {
    const int64_t H = h_, W = w_, OH = oh_, OW = ow_, K = k_;
    int32_t* arg_all = argmax_.data();
#pragma omp parallel for
    for (int64_t p = 0; p < planes_; ++p) {
      const float* __restrict xp = x + p * H * W;
      float* __restrict yp = y + p * OH * OW;
      int32_t* __restrict ap = arg_all + p * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int32_t a = static_cast<int32_t>(oh * K * W + ow * K);
          float best = xp[a];
          for (int64_t kh = 0; kh < K; ++kh)
            for (int64_t kw = 0; kw < K; ++kw) {
              const int32_t i = static_cast<int32_t>((oh * K + kh) * W + ow * K + kw);
              if (xp[i] > best) best = xp[i], a = i;
            }
          yp[oh * OW + ow] = best;
          ap[oh * OW + ow] = a;
        }
    }
  }

  void backward(const float* dy, float* dx) override {
    const int64_t H = h_, W = w_, OH = oh_, OW = ow_;
    const int32_t* arg_all = argmax_.data();
#pragma omp parallel for
    for (int64_t p = 0; p < planes_; ++p) {
      const float* __restrict dyp = dy + p * OH * OW;
      const int32_t* __restrict ap = arg_all + p * OH * OW;
      float* __restrict dxp = dx + p * H * W;
      std::memset(dxp, 0, H * W * sizeof(float));  // one plane: stays in L1 for the scatter
      for (int64_t o = 0; o < OH * OW; ++o) dxp[ap[o]] = dyp[o];
    }
  }

 private:
  int64_t planes_, h_, w_, oh_, ow_, k_;
  std::vector<int32_t> argmax_;  // plane-local index of each window's maximum
};

}  // namespace

std::unique_ptr<MaxPoolKernel> make_tiled_max_pool(const PoolDims& d) {
  if (d.kernel != d.stride || d.in_h * d.in_w > (int64_t{1} << 30)) return nullptr;
  return std::make_unique<TiledMaxPool>(d);
}

}  // namespace hpdl
