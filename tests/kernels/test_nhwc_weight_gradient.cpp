// hpdl's NHWC weight gradient for several input channels (src/kernels/cpu/nhwc_weight_gradient.hpp)
// against sums in double, on shapes that reach each of its paths whatever the vector width:
// output channels in whole vectors, in vectors and a few left over (window tiles), fewer
// than a vector, and left over where a padded vector is cheaper; window rows of fewer floats
// than a vector; stride 2 and no padding; an image large enough for several chunks of rows;
// more samples than a group; one and two threads, and more threads than samples. It adds
// to dw and db (the kernel contract). And the oneDNN backend picks it for LeNet's conv2
// where oneDNN's channel blocks are 8.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cpu/nhwc_weight_gradient.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "kernel_env.hpp"
#include "kernel_passes.hpp"
#include "random_values.hpp"

using namespace hpdl;

namespace {

// dw [O, C, K, K] and db [O] of x [N, H, W, C] and dy [N, OH, OW, O], in double.
std::vector<std::vector<double>> gradients(const ConvDims& d, const std::vector<float>& x,
                                           const std::vector<float>& dy) {
  const int64_t C = d.in_c, O = d.out_c, K = d.kernel, OH = d.out_h(), OW = d.out_w();
  std::vector<double> dw(size_t(O * C * K * K), 0.0), db(size_t(O), 0.0);
  for (int64_t n = 0; n < d.batch; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const float* g = dy.data() + ((n * OH + oh) * OW + ow) * O;
        for (int64_t o = 0; o < O; ++o) db[size_t(o)] += g[o];
        for (int64_t kh = 0; kh < K; ++kh)
          for (int64_t kw = 0; kw < K; ++kw) {
            const int64_t h = oh * d.stride + kh - d.pad, w = ow * d.stride + kw - d.pad;
            if (h < 0 || h >= d.in_h || w < 0 || w >= d.in_w) continue;
            const float* xv = x.data() + ((n * d.in_h + h) * d.in_w + w) * C;
            for (int64_t o = 0; o < O; ++o)
              for (int64_t c = 0; c < C; ++c)
                dw[size_t(((o * C + c) * K + kh) * K + kw)] += double(xv[c]) * g[o];
          }
      }
  return {dw, db};
}

// max |got - (start + want)| / max |want|.
double worst(const std::vector<float>& got, const std::vector<float>& start,
             const std::vector<double>& want) {
  double most = 0, scale = 1e-30;
  for (size_t i = 0; i < want.size(); ++i) {
    most = std::max(most, std::abs(double(got[i]) - double(start[i]) - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return most / scale;
}

}  // namespace

TEST(NhwcWeightGradient, EqualsSumsInDouble) {
  // batch, in_c, in_h, in_w, out_c, kernel, stride, pad
  const ConvDims shapes[] = {
      {11, 20, 14, 14, 50, 5, 1, 2},  // LeNet's conv2; 11 samples: a group of 8 and 3
      {3, 3, 9, 7, 48, 3, 1, 1},      // whole vectors (8 and 16 wide), 9 floats a window row
      {2, 2, 6, 6, 3, 3, 1, 1},       // fewer channels than a vector
      {2, 5, 8, 8, 15, 1, 2, 0},      // 7 or 15 left over: a padded vector; stride 2, no pad
      {2, 5, 9, 9, 21, 3, 2, 0},      // 5 left over (8 wide) by window tiles; stride 2
      {3, 16, 30, 30, 33, 3, 1, 1},   // several chunks of rows; 1 channel left over (any width)
      {2, 4, 5, 5, 18, 1, 1, 0},      // a 1 x 1 window: 4 floats a window row, read past
      {1, 7, 12, 12, 20, 7, 1, 3},    // a 7 x 7 window; 1 sample for 2 threads
  };
  for (const ConvDims& d : shapes) {
    ASSERT_TRUE(NhwcWeightGradient::fits(d));
    const auto x = uniform_values(d.batch * d.in_h * d.in_w * d.in_c, 1, 3);
    const auto dy = uniform_values(d.batch * d.out_h() * d.out_w() * d.out_c, 2, 3);
    const auto want = gradients(d, x, dy);
    const auto dw0 = uniform_values(int64_t(want[0].size()), 3, 3);
    const auto db0 = uniform_values(d.out_c, 4, 3);
    for (const int threads : {1, 2}) {
      std::vector<float> dw = dw0, db = db0;
      NhwcWeightGradient(d, threads).accumulate(x.data(), dy.data(), dw.data(), db.data());
      const std::string shape = std::to_string(d.in_c) + " -> " + std::to_string(d.out_c) +
                                ", window " + std::to_string(d.kernel) + ", " +
                                std::to_string(threads) + " threads";
      EXPECT_LT(worst(dw, dw0, want[0]), 1e-5) << "weights, " << shape;
      EXPECT_LT(worst(db, db0, want[1]), 1e-5) << "bias, " << shape;
    }
  }
}

// The same kernel made once gives the same bits on every call (its buffers are reused).
TEST(NhwcWeightGradient, RepeatsItsBits) {
  const ConvDims d{5, 20, 14, 14, 50, 5, 1, 2};
  const auto x = uniform_values(d.batch * d.in_h * d.in_w * d.in_c, 5, 3);
  const auto dy = uniform_values(d.batch * d.out_h() * d.out_w() * d.out_c, 6, 3);
  NhwcWeightGradient k(d, 2);
  std::vector<float> first(size_t(50 * 20 * 25), 0.0f), again = first, b1(50, 0.0f), b2 = b1;
  k.accumulate(x.data(), dy.data(), first.data(), b1.data());
  k.accumulate(x.data(), dy.data(), again.data(), b2.data());
  EXPECT_EQ(first, again);
  EXPECT_EQ(b1, b2);
}

TEST(NhwcWeightGradient, OneDnnBackendPicksItWhereBlocksAreEight) {
  if (onednn_gemm() != "oneDNN") GTEST_SKIP() << "HPDL_GEMM=blas: no oneDNN convolution";
#if !defined(__x86_64__)
  GTEST_SKIP() << "the rule applies on x86-64 only (elsewhere: blocked, oneDNN's choice)";
#endif
  const std::string choice = onednn_kernels()->conv({2, 20, 14, 14, 50, 5, 1, 2})->choice().kernel;
  const bool avx512 = choice.find("avx512") != std::string::npos;
  EXPECT_EQ(choice.find("weights hpdl's NHWC kernel") != std::string::npos, !avx512) << choice;
}
