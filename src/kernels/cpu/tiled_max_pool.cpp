// Non-overlapping max pooling on NCHW planes. Forward keeps the plane-local index of each
// window's maximum (with a fused ReLU, -1 where the maximum is <= 0); backward clears one
// plane (cache-resident) and scatters into it.
// P planes (N*C), H/W input, OH/OW output, K window = stride.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "hpdl/core/error.hpp"
#include "max_pool.hpp"

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
        relu_(d.relu),
        argmax_(planes_ * oh_ * ow_) {}

  void forward(const float* x, float* y) override {
    const int64_t H = h_, W = w_, OH = oh_, OW = ow_;
    int32_t* arg_all = argmax_.data();
#pragma omp parallel for
    for (int64_t p = 0; p < planes_; ++p) {
      const float* __restrict xp = x + p * H * W;
      float* __restrict yp = y + p * OH * OW;
      int32_t* __restrict ap = arg_all + p * OH * OW;
      if (k_ == 2)
        plane_2x2(xp, yp, ap);
      else
        plane(xp, yp, ap);
      if (relu_) relu_plane(yp, ap);  // the plane's outputs are still in L1
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
      if (relu_) {
        for (int64_t o = 0; o < OH * OW; ++o)
          if (ap[o] >= 0) dxp[ap[o]] = dyp[o];
      } else {
        for (int64_t o = 0; o < OH * OW; ++o) dxp[ap[o]] = dyp[o];
      }
    }
  }

  // Asked again with blocks, the factory makes a BlockMaxPool (block_max_pool.cpp).
  Takes takes() const override { return {relu_, true}; }

 private:
  // Any K: the first maximum in row-major window order.
  void plane(const float* __restrict xp, float* __restrict yp, int32_t* __restrict ap) const {
    const int64_t W = w_, OH = oh_, OW = ow_, K = k_;
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

  // K = 2, the same first maximum with the window unrolled: each row's pair first, then the
  // two rows, as selects the compiler turns into vector compares and blends (2.2x the
  // generic loop on LeNet's pool1, measured on AVX-512).
  void plane_2x2(const float* __restrict xp, float* __restrict yp, int32_t* __restrict ap) const {
    const int64_t W = w_, OH = oh_;
    const int32_t w = static_cast<int32_t>(W), OW = static_cast<int32_t>(ow_);
    for (int64_t oh = 0; oh < OH; ++oh) {
      const float* __restrict r0 = xp + 2 * oh * W;
      const float* __restrict r1 = r0 + W;
      float* __restrict yo = yp + oh * OW;
      int32_t* __restrict ao = ap + oh * OW;
      const int32_t base = static_cast<int32_t>(2 * oh * W);
      for (int32_t ow = 0; ow < OW; ++ow) {
        const float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
        const float m0 = std::max(a, b), m1 = std::max(c, d);  // the first of equals
        const int32_t i0 = int32_t(a < b), i1 = w + int32_t(c < d), later = int32_t(m0 < m1);
        yo[ow] = std::max(m0, m1);
        ao[ow] = base + 2 * ow + i0 + later * (i1 - i0);
      }
    }
  }

  // The fused ReLU on one plane's outputs: y > 0 ? y : 0 (as the ReLU kernels), and no
  // gradient to a window whose maximum is not > 0.
  void relu_plane(float* __restrict yp, int32_t* __restrict ap) const {
    const int64_t n = oh_ * ow_;
    for (int64_t o = 0; o < n; ++o) {
      const bool keep = yp[o] > 0;
      yp[o] = keep ? yp[o] : 0.0f;
      ap[o] = keep ? ap[o] : -1;
    }
  }

  int64_t planes_, h_, w_, oh_, ow_, k_;
  bool relu_;                    // PoolDims::relu
  std::vector<int32_t> argmax_;  // plane-local index of each window's maximum; -1: none
};

}  // namespace

bool cpu_max_pool_fits(const PoolDims& d) {
  return d.kernel == d.stride && d.in_h * d.in_w <= (int64_t{1} << 30);
}

std::unique_ptr<MaxPoolKernel> make_cpu_max_pool(const PoolDims& d) {
  HPDL_REQUIRE(cpu_max_pool_fits(d), "max pool: hpdl's pool takes windows equal to their stride");
  if (d.in_block != 1 || d.out_block != 1) return make_block_max_pool(d);
  return std::make_unique<TiledMaxPool>(d);
}

}  // namespace hpdl
